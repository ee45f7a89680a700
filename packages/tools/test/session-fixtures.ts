import { rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SimRequestRecord } from '@zmcp/zulip-sim';
import { expect } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import type { ToolServices } from '../src/services.js';
import {
  type AgentSession,
  type AgentSessionOptions,
  createAgentSession,
} from '../src/session/agent-session.js';
import { sessionCatalog } from '../src/session/index.js';
import type { AnyToolDefinition, PromptDefinition, ToolFailure } from '../src/tool.js';
import { callThrough, checkedOk, testHost } from './call.js';
import type { Harness } from './harness.js';

// Helpers shared by the session-tool tests.

type Result = ToolCallOutcome;

/** One agent session over a harness, with its tools. */
export interface SessionRig {
  session: AgentSession;
  tools: Map<string, AnyToolDefinition>;
  prompts: PromptDefinition[];
  call(
    name: string,
    args: unknown,
    options?: {
      signal?: AbortSignal;
      progress?: (update: { progress: number; total?: number; message?: string }) => void;
    },
  ): Promise<Result>;
}

const open: AgentSession[] = [];

/** Builds a session and its tools over the harness (or other services of it). */
export function sessionRig(
  h: Harness,
  options: AgentSessionOptions = {},
  services: ToolServices = h.services,
): SessionRig {
  const session = createAgentSession(services, options);
  open.push(session);
  const catalog = sessionCatalog(services, session);
  const { host, tools } = testHost(catalog.tools, 60_000);
  return {
    session,
    tools,
    prompts: catalog.prompts,
    call(name, args, callOptions = {}) {
      return callThrough(host, name, args, callOptions);
    },
  };
}

/** Closes every session the tests of a file made (removes indicators, stops listens). */
export async function closeSessions(): Promise<void> {
  for (const session of open.splice(0)) await session.close();
}

/** Asserts success and that `structured` matches the tool's output schema exactly. */
export function ok(
  rig: SessionRig,
  name: string,
  result: Result,
): { text: string; structured: Record<string, unknown> } {
  return checkedOk(rig.tools, name, result);
}

/** Asserts a failure with `code`. */
export function fails(result: Result, code: string): ToolFailure {
  if (result.isError !== true) throw new Error(`expected ${code}, got success: ${result.text}`);
  expect(result.code, result.text).toBe(code);
  return result;
}

/** Yields to the event loop once (lets pending I/O run); not a timer. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits until `check()` holds, checking after each turn of the event loop. */
export async function until(check: () => boolean): Promise<void> {
  while (!check()) await turn();
}

/** Waits until the bot has an event queue narrowed to `topic` blocked in a long poll. */
export async function polling(h: Harness, topic: string): Promise<void> {
  await until(() =>
    h.sim
      .queues(h.realm.bot.userId)
      .some((q) => q.polling && q.narrow.some(([op, operand]) => op === 'topic' && operand === topic)),
  );
}

/** Resolves with the first answered request matching `match` from now on. */
export function nextRequest(h: Harness, match: (r: SimRequestRecord) => boolean): Promise<SimRequestRecord> {
  return new Promise((resolve) => {
    const off = h.sim.onRequest((r) => {
      if (!match(r)) return;
      off();
      resolve(r);
    });
  });
}

/** Records the typing notifications the bot sends from now on, as `op` values. */
export function typingLog(h: Harness): { ops: string[]; stop(): void } {
  const ops: string[] = [];
  const stop = h.sim.onRequest((r) => {
    if (r.method === 'POST' && r.path.endsWith('/typing') && r.userId === h.realm.bot.userId) {
      ops.push(String(r.params.op));
    }
  });
  return { ops, stop };
}

let dropCounter = 0;

/** Drops an interrupt file the way writers should: a temp file renamed over the path. */
export async function dropInterrupt(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `writer-${process.pid}-${dropCounter++}.tmp`);
  await writeFile(temp, text);
  await rename(temp, path);
}

/** The bot's reactions on a message, as the realm stores them. */
export function botReactions(h: Harness, messageId: number) {
  return (h.sim.realm.message(messageId)?.reactions ?? []).filter((r) => r.userId === h.realm.bot.userId);
}
