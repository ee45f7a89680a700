import { MockAgent } from 'undici';
import type { Clock } from '../../src/client/clock.js';
import type { Logger } from '../../src/client/logger.js';
import { ZulipClient, type ZulipClientOptions } from '../../src/client/zulip-client.js';

export const SITE = 'https://zulip.example';
export const EMAIL = 'helper-bot@zulip.example';
// A throwaway key in Zulip's shape; tests check that it never leaks.
export const API_KEY = 'Xy7Qp2LmN8rT4vW6zA1bC3dE5fG7hJ9k';

/** A MockAgent that refuses real connections, and its interceptable pool for {@link SITE}. */
export function mockRealm() {
  const agent = new MockAgent({ connections: 1 });
  agent.disableNetConnect();
  return { agent, pool: agent.get(SITE) };
}

/** A clock whose sleeps return at once and are recorded. */
export function fakeClock(start = 1_767_225_600_000) {
  const sleeps: number[] = [];
  let now = start;
  const clock: Clock = {
    now: () => now,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      now += ms;
    },
  };
  return { clock, sleeps, advance: (ms: number) => (now += ms) };
}

/** A logger that keeps every line, as JSON, for leak checks. */
export function recordingLogger() {
  const lines: string[] = [];
  const log =
    (level: string) =>
    (message: string, fields?: Readonly<Record<string, unknown>>): void => {
      lines.push(JSON.stringify({ level, message, fields }));
    };
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  return { logger, lines };
}

export function mockClient(agent: MockAgent, overrides: Partial<ZulipClientOptions> = {}): ZulipClient {
  return new ZulipClient({
    site: SITE,
    email: EMAIL,
    apiKey: API_KEY,
    dispatcher: agent,
    random: () => 0.5,
    ...overrides,
  });
}

export function ok(data: Record<string, unknown> = {}) {
  return { result: 'success', msg: '', ...data };
}

export function zulipError(code: string, msg: string, extra: Record<string, unknown> = {}) {
  return { result: 'error', msg, code, ...extra };
}

/** The parameters of a request: its query string, or its form body. */
export function paramsOf(opts: { path: string; body?: unknown }): URLSearchParams {
  const query = opts.path.includes('?') ? opts.path.slice(opts.path.indexOf('?') + 1) : '';
  const body = typeof opts.body === 'string' ? opts.body : '';
  return new URLSearchParams(body !== '' ? body : query);
}

let nextId = 1000;

/** A stream message in Zulip's shape. */
export function streamMessage(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const id = (overrides.id as number | undefined) ?? nextId++;
  return {
    id,
    type: 'stream',
    stream_id: 12,
    display_recipient: 'general',
    subject: 'deploys',
    content: `message ${id}`,
    content_type: 'text/x-markdown',
    sender_id: 8,
    sender_email: 'alice@zulip.example',
    sender_full_name: 'Alice',
    timestamp: 1_767_225_600 + id,
    reactions: [],
    flags: ['read'],
    ...overrides,
  };
}
