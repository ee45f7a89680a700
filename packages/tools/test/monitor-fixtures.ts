import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessPolicy, type AccessPolicyConfig, ZulipClient } from '@zmcp/core';
import { FileStateStore, MonitorStore, MonitorWatcher } from '@zmcp/delivery';
import { expect } from 'vitest';
import { type MonitorCatalog, monitorCatalog } from '../src/monitor/index.js';
import { runTool } from '../src/run.js';
import { createToolServices, loadRealmFacts, type ToolServices } from '../src/services.js';
import type { ToolDefinition, ToolFailure, ToolResult } from '../src/tool.js';
import { type Harness, type HarnessOptions, startHarness } from './harness.js';

// Helpers shared by the monitor tests: the harness realm plus a monitor over a temp state dir.

/** One server's monitor: its services, catalog and watcher over a state directory. */
export interface MonitorInstance {
  services: ToolServices;
  monitor: MonitorStore;
  watcher: MonitorWatcher;
  catalog: MonitorCatalog;
  tools: Map<string, ToolDefinition>;
  call(name: string, args?: unknown): Promise<ToolResult<Record<string, unknown>>>;
  close(): Promise<void>;
}

/** The harness realm with a monitor, and a way to start another server over the same state. */
export interface MonitorHarness extends MonitorInstance {
  h: Harness;
  stateDir: string;
  /** Another server process over the same realm, state directory and session (a restart). */
  reopen(options?: { policy?: Partial<AccessPolicyConfig>; session?: string }): Promise<MonitorInstance>;
  /** Posts as Ann (a human). */
  post(stream: string, content: string, topic?: string): number;
}

async function instance(
  services: ToolServices,
  client: ZulipClient,
  stateDir: string,
  session: string,
  ownClient: boolean,
): Promise<MonitorInstance> {
  const monitor = new MonitorStore(new FileStateStore({ dir: stateDir }), session);
  const watcher = new MonitorWatcher({ client, monitor, selfUserId: services.identity.user_id });
  const catalog = monitorCatalog(services, monitor, watcher);
  const tools = new Map(catalog.tools.map((t) => [t.name, t]));
  return {
    services,
    monitor,
    watcher,
    catalog,
    tools,
    call(name, args = {}) {
      const tool = tools.get(name);
      if (tool === undefined) throw new Error(`no monitor tool named ${name}`);
      return runTool(tool, args, { signal: AbortSignal.timeout(15_000), progress: () => {} }) as Promise<
        ToolResult<Record<string, unknown>>
      >;
    },
    async close() {
      await watcher.close();
      if (ownClient) await client.close();
    },
  };
}

/** Starts the harness realm and a monitor for session `agent` over a fresh temp state dir. */
export async function startMonitorHarness(options: HarnessOptions = {}): Promise<MonitorHarness> {
  const h = await startHarness(options);
  const stateDir = await mkdtemp(join(tmpdir(), 'zmcp-monitor-'));
  const main = await instance(h.services, h.client, stateDir, 'agent', false);
  const others: MonitorInstance[] = [];
  return {
    ...main,
    h,
    stateDir,
    async reopen(reopenOptions = {}) {
      const policyConfig: AccessPolicyConfig = {
        readOnly: false,
        ...options.policy,
        ...reopenOptions.policy,
      };
      const credentials = h.sim.credentials(h.realm.bot.userId);
      const client = new ZulipClient({ ...credentials, readOnly: policyConfig.readOnly });
      const facts = await loadRealmFacts(client, { readOnly: policyConfig.readOnly });
      const services = createToolServices({
        client,
        policy: new AccessPolicy(policyConfig),
        site: credentials.site,
        identity: facts.identity,
        maxMessageLength: 10_000,
        maxFileBytes: 25 * 1024 * 1024,
        pageBudgetBytes: options.pageBudgetBytes,
      });
      const other = await instance(services, client, stateDir, reopenOptions.session ?? 'agent', true);
      others.push(other);
      return other;
    },
    post(stream, content, topic = 'chat') {
      return h.post(h.realm.ann, stream, topic, content);
    },
    async close() {
      for (const o of others.splice(0)) await o.close();
      await main.close();
      await h.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/**
 * Asserts a tool call succeeded and that its structured output matches the tool's output
 * schema exactly, then returns the text and the structured output.
 */
export function ok<T = Record<string, unknown>>(
  m: MonitorInstance,
  name: string,
  result: ToolResult<Record<string, unknown>>,
): { text: string; structured: T } {
  if (result.isError === true) throw new Error(`${name} failed: ${result.code}: ${result.text}`);
  const tool = m.tools.get(name) as ToolDefinition;
  const parsed = tool.outputSchema.safeParse(result.structured);
  expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
  expect(parsed.data).toEqual(result.structured);
  return { text: result.text, structured: result.structured as T };
}

/** Asserts a tool call failed with `code` and returns the failure. */
export function failed(result: ToolResult<Record<string, unknown>>, code: string): ToolFailure {
  if (result.isError !== true) throw new Error(`expected ${code}, got success: ${result.text}`);
  expect(result.code, result.text).toBe(code);
  return result;
}

/** A promise for the next URI a changes listener hears that passes `test`, and the unsubscribe. */
export function nextChange(
  catalog: MonitorCatalog,
  test: (uri: string) => boolean,
): { uri: Promise<string>; heard: string[]; unsubscribe: () => Promise<void> } {
  const heard: string[] = [];
  let resolve!: (uri: string) => void;
  const uri = new Promise<string>((r) => {
    resolve = r;
  });
  const unsubscribe = catalog.changes.subscribe((u) => {
    heard.push(u);
    if (test(u)) resolve(u);
  });
  return { uri, heard, unsubscribe };
}
