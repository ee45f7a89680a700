import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessPolicy, type AccessPolicySettings, ZulipClient } from '@zmcp/core';
import { FileStateStore, MonitorStore, MonitorWatcher } from '@zmcp/delivery';
import { expect } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { type MonitorCatalog, monitorCatalog } from '../src/monitor/index.js';
import { createToolServices, loadRealmFacts, type ToolServices } from '../src/services.js';
import type { AnyToolDefinition, ToolFailure } from '../src/tool.js';
import { callThrough, checkedOk, testHost } from './call.js';
import { type Harness, type HarnessOptions, simStreams, startHarness } from './harness.js';

// Helpers shared by the monitor tests: the harness realm plus a monitor over a temp state dir.

/** One server's monitor: its services, catalog and watcher over a state directory. */
export interface MonitorInstance {
  services: ToolServices;
  monitor: MonitorStore;
  watcher: MonitorWatcher;
  catalog: MonitorCatalog;
  tools: Map<string, AnyToolDefinition>;
  call(name: string, args?: unknown): Promise<ToolCallOutcome>;
  close(): Promise<void>;
}

/** The harness realm with a monitor, and a way to start another server over the same state. */
export interface MonitorHarness extends MonitorInstance {
  h: Harness;
  stateDir: string;
  /** Another server process over the same realm, state directory and session (a restart). */
  reopen(options?: { policy?: Partial<AccessPolicySettings>; session?: string }): Promise<MonitorInstance>;
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
  const { host, tools } = testHost(catalog.tools);
  return {
    services,
    monitor,
    watcher,
    catalog,
    tools,
    call(name, args = {}) {
      return callThrough(host, name, args);
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
      const policyConfig: AccessPolicySettings = {
        readOnly: false,
        ...options.policy,
        ...reopenOptions.policy,
      };
      const credentials = h.sim.credentials(h.realm.bot.userId);
      const client = new ZulipClient({ ...credentials, readOnly: policyConfig.readOnly });
      const facts = await loadRealmFacts(client, { readOnly: policyConfig.readOnly });
      const services = createToolServices({
        client,
        policy: AccessPolicy.resolve(policyConfig, simStreams(h.sim)),
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
  result: ToolCallOutcome,
): { text: string; structured: T } {
  const checked = checkedOk(m.tools, name, result);
  return { text: checked.text, structured: checked.structured as T };
}

/** Asserts a tool call failed with `code` and returns the failure. */
export function failed(result: ToolCallOutcome, code: string): ToolFailure {
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
