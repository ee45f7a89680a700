import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ZulipClient } from '../src/client/zulip-client.js';
import type { ZmcpError } from '../src/errors.js';
import { recordingLogger } from './helpers/mock-realm.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

async function failure(p: Promise<unknown>): Promise<ZmcpError> {
  try {
    await p;
  } catch (err) {
    return err as ZmcpError;
  }
  throw new Error('expected a failure');
}

/** A loopback port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('faults against the simulator', () => {
  it('a wrong key is CORE_UNAUTHORIZED, and the key appears nowhere', async () => {
    f = await startSimRealm();
    const log = recordingLogger();
    const wrongKey = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const client = f.clientFor(f.bot.userId, { apiKey: wrongKey, logger: log.logger });
    const err = await failure(client.getOwnUser());
    expect(err).toMatchObject({ code: 'CORE_UNAUTHORIZED', status: 401 });
    expect([err.message, JSON.stringify(err), ...log.lines].join()).not.toContain(wrongKey);
  });

  it('a realm that is down is CORE_NETWORK after the retries', async () => {
    const log = recordingLogger();
    const client = new ZulipClient({
      site: `http://127.0.0.1:${await deadPort()}`,
      email: 'bot@zulip.example',
      apiKey: 'Xy7Qp2LmN8rT4vW6zA1bC3dE5fG7hJ9k',
      retry: { maxAttempts: 3, baseDelayMs: 1 },
      logger: log.logger,
    });
    const err = await failure(client.getOwnUser());
    expect(err).toMatchObject({
      code: 'CORE_NETWORK',
      details: { phase: 'connect', errorCode: 'ECONNREFUSED' },
    });
    expect(log.lines.filter((l) => l.includes('retrying'))).toHaveLength(2);
    await client.close();
  });

  it('a slow answer is CORE_TIMEOUT at the per-call deadline', async () => {
    f = await startSimRealm();
    f.sim.faults.add({ path: '/users/me', latencyMs: 2_000, times: 1 });
    const err = await failure(f.client.getOwnUser({ timeoutMs: 100 }));
    expect(err).toMatchObject({ code: 'CORE_TIMEOUT', details: { timeoutMs: 100 } });
  });

  it('the client-wide default deadline applies when the call gives none', async () => {
    f = await startSimRealm({}, { timeoutMs: 100 });
    f.sim.faults.add({ path: '/users/me', latencyMs: 2_000, times: 1 });
    expect((await failure(f.client.getOwnUser())).code).toBe('CORE_TIMEOUT');
  });

  it('5xx on a GET is retried until it succeeds', async () => {
    f = await startSimRealm();
    const fault = f.sim.faults.add({ path: '/users/me', status: 503, times: 2 });
    await expect(f.client.getOwnUser()).resolves.toMatchObject({ user_id: f.bot.userId });
    expect(fault.hits).toBe(2);
  });

  it('5xx on a send is not retried', async () => {
    f = await startSimRealm();
    const fault = f.sim.faults.add({ method: 'POST', path: '/messages', status: 500, times: 1 });
    const before = f.sim.realm.messageCount();
    const err = await failure(
      f.client.sendMessage({ type: 'stream', to: 'general', topic: 't', content: 'x' }),
    );
    expect(err).toMatchObject({ code: 'CORE_SERVER_ERROR', status: 500 });
    expect(fault.hits).toBe(1);
    expect(f.sim.realm.messageCount()).toBe(before);
  });

  it('a torn connection is retried for a GET', async () => {
    f = await startSimRealm();
    const fault = f.sim.faults.add({ path: '/messages', method: 'GET', dropConnection: true, times: 1 });
    const res = await f.client.getMessages({ anchor: 'newest', numBefore: 5 });
    expect(Array.isArray(res.messages)).toBe(true);
    expect(fault.hits).toBe(1);
  });

  it('a torn connection on a send is reported, never repeated: no double post', async () => {
    f = await startSimRealm();
    f.sim.faults.add({ path: '/messages', method: 'POST', dropConnection: true, times: 1 });
    const before = f.sim.realm.messageCount();
    const err = await failure(
      f.client.sendMessage({ type: 'stream', to: 'general', topic: 't', content: 'once' }),
    );
    expect(err.code).toBe('CORE_NETWORK');
    // The simulator handled the request before tearing the answer: exactly one message exists.
    expect(f.sim.realm.messageCount()).toBe(before + 1);
  });

  it('truncated JSON is retried for a GET and reported as CORE_BAD_RESPONSE when it persists', async () => {
    f = await startSimRealm();
    f.sim.faults.add({ path: '/users/me', truncateBody: true, times: 1 });
    await expect(f.client.getOwnUser()).resolves.toMatchObject({ user_id: f.bot.userId });
    f.sim.faults.add({ path: '/users/me', truncateBody: true });
    const err = await failure(f.client.getOwnUser());
    expect(err.code).toBe('CORE_BAD_RESPONSE');
  });

  it('a short 429 storm is waited out per Retry-After', async () => {
    f = await startSimRealm();
    const fault = f.sim.faults.add({ path: '/users/me', status: 429, retryAfter: 0.02, times: 3 });
    await expect(f.client.getOwnUser()).resolves.toMatchObject({ user_id: f.bot.userId });
    expect(fault.hits).toBe(3);
  });

  it('a long 429 storm ends in CORE_RATE_LIMITED with the wait Zulip asked for', async () => {
    f = await startSimRealm({}, { retry: { maxRateLimitWaits: 2 } });
    f.sim.faults.add({ path: '/users/me', status: 429, retryAfter: 0.01 });
    const err = await failure(f.client.getOwnUser());
    expect(err).toMatchObject({ code: 'CORE_RATE_LIMITED', status: 429, details: { retryAfterMs: 10 } });
  });

  it("paces itself by X-RateLimit-Remaining so Zulip's limit is never hit", async () => {
    f = await startSimRealm({ rateLimit: { requests: 5, windowMs: 1_000 } });
    const statuses: number[] = [];
    const stop = f.sim.onRequest((r) => statuses.push(r.status));
    for (let i = 0; i < 8; i++) await f.client.getOwnUser({ timeoutMs: 10_000 });
    stop();
    expect(statuses).toHaveLength(8);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
  });

  it('keeps state per client: one realm rate-limiting does not slow another', async () => {
    f = await startSimRealm();
    const other = await startSimRealm();
    try {
      f.sim.faults.add({ path: '/users/me', status: 429, retryAfter: 30 });
      const limited = await failure(f.client.getOwnUser({ timeoutMs: 1_000 }));
      expect(limited.code).toBe('CORE_RATE_LIMITED');
      // The first client now holds its requests for 30 s; the second realm's client is unaffected.
      expect((await failure(f.client.getStreams({}, { timeoutMs: 1_000 }))).code).toBe('CORE_RATE_LIMITED');
      await expect(other.client.getOwnUser({ timeoutMs: 1_000 })).resolves.toMatchObject({
        user_id: other.bot.userId,
      });
    } finally {
      await other.close();
    }
  });
});
