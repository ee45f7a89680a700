import { afterEach, describe, expect, it } from 'vitest';
import { SimError, startZulipSim } from '../src/index.js';
import { manualClock, untilPolling, type World, world } from './helpers.js';

let w: World;
afterEach(async () => {
  await w.sim.close();
});

describe('rate limiting', () => {
  it('puts X-RateLimit-* on authenticated responses and answers 429 RATE_LIMIT_HIT past the budget', async () => {
    const clock = manualClock();
    w = await world({ now: clock.now, rateLimit: { requests: 3, windowMs: 10_000 } });
    const first = await w.alice.get('/users/me');
    expect(first.headers.get('x-ratelimit-limit')).toBe('3');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(Number(first.headers.get('x-ratelimit-reset'))).toBe(Math.floor((clock.now() + 10_000) / 1000));
    clock.advance(2_500);
    const error = await w.alice.get('/messages', { anchor: 'nope' });
    expect(error.status).toBe(400);
    expect(error.headers.get('x-ratelimit-remaining')).toBe('1');
    await w.alice.get('/users/me');
    const limited = await w.alice.get('/users/me');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      result: 'error',
      msg: 'API usage exceeded rate limit',
      code: 'RATE_LIMIT_HIT',
      'retry-after': 7.5,
    });
    expect(limited.headers.get('retry-after')).toBe('7.5');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await w.bob.get('/users/me')).status).toBe(200);
    const settings = await fetch(`${w.sim.url}/api/v1/server_settings`);
    expect(settings.headers.get('x-ratelimit-limit')).toBeNull();
    clock.advance(7_500);
    expect((await w.alice.get('/users/me')).status).toBe(200);
  });

  it('can be switched off or retuned at run time', async () => {
    w = await world({ rateLimit: { requests: 1, windowMs: 60_000 } });
    await w.alice.get('/users/me');
    expect((await w.alice.get('/users/me')).status).toBe(429);
    w.sim.configure({ rateLimit: false });
    const r = await w.alice.get('/users/me');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('fault injection', () => {
  it('forces 5xx and 429 on a route without handling the request, for a number of times', async () => {
    w = await world();
    const rule = w.sim.faults.add({ method: 'POST', path: '/messages', status: 503, times: 1 });
    const params = { type: 'stream', to: 'general', topic: 't', content: 'x' };
    const failed = await w.alice.post('/messages', params);
    expect(failed.status).toBe(503);
    expect(failed.text).toContain('503 Service Unavailable');
    expect(w.realm.messageCount()).toBe(0);
    expect((await w.alice.post('/messages', params)).status).toBe(200);
    expect(rule.hits).toBe(1);
    w.sim.faults.add({ path: /\/users\/me$/, status: 429, retryAfter: 2 });
    const limited = await w.alice.get('/users/me');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(limited.body).toMatchObject({ code: 'RATE_LIMIT_HIT', 'retry-after': 2 });
    w.sim.faults.add({ path: '/api/v1/users', status: 500 });
    expect((await w.alice.get('/users')).body).toEqual({
      result: 'error',
      msg: 'Internal server error',
      code: 'BAD_REQUEST',
    });
    w.sim.faults.clear();
    expect((await w.alice.get('/users/me')).status).toBe(200);
  });

  it('adds latency and counts hits', async () => {
    w = await world();
    const rule = w.sim.faults.add({ path: '/users/me', latencyMs: 20 });
    expect((await w.alice.get('/users/me')).status).toBe(200);
    expect((await w.alice.get('/users')).status).toBe(200);
    expect(rule.hits).toBe(1);
    rule.remove();
    await w.alice.get('/users/me');
    expect(rule.hits).toBe(1);
  });

  it('drops the connection mid-response after handling the request', async () => {
    w = await world();
    w.sim.faults.add({ method: 'POST', path: '/messages', dropConnection: true, times: 1 });
    await expect(
      w.alice.post('/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' }),
    ).rejects.toThrow();
    expect(w.realm.messageCount()).toBe(1);
  });

  it('truncates a body mid-JSON behind valid headers', async () => {
    w = await world();
    w.sim.faults.add({ path: '/users', truncateBody: true, times: 1 });
    const r = await w.alice.get('/users');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.body).toBeUndefined();
    expect(r.text.startsWith('{"result":"success"')).toBe(true);
  });
});

describe('restart', () => {
  it('reopens on the same port with the realm and the queues kept', async () => {
    w = await world();
    const url = w.sim.url;
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'before restart' });
    const { queueId } = await w.bob.register({ event_types: ['message'] });
    const poll = w.bob.poll(queueId, -1);
    await untilPolling(w.sim, queueId);
    await w.sim.restart();
    await expect(poll).rejects.toThrow();
    expect(w.sim.url).toBe(url);
    expect((await w.bob.get(`/messages/${id}`)).body.message.content).toBe('<p>before restart</p>');
    const next = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'after' });
    expect(next).toBeGreaterThan(id);
    expect((await w.bob.events(queueId)).map((e) => (e as { message: { id: number } }).message.id)).toEqual([
      next,
    ]);
  });

  it('forgets queues with keepQueues: false', async () => {
    w = await world();
    const { queueId } = await w.bob.register();
    await w.sim.restart({ keepQueues: false });
    expect((await w.bob.poll(queueId, -1, { dont_block: true })).body.code).toBe('BAD_EVENT_QUEUE_ID');
  });
});

describe('request log', () => {
  it('records method, path and parsed params without the API key', async () => {
    w = await world();
    const seen: string[] = [];
    const stop = w.sim.onRequest((r) => seen.push(`${r.method} ${r.path} ${r.status}`));
    await w.alice.post('/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' });
    await fetch(`${w.sim.url}/user_uploads/2/aa/bb/c.png?api_key=${w.alice.apiKey}`);
    stop();
    await w.alice.get('/users/me');
    expect(seen).toEqual(['POST /api/v1/messages 200', 'GET /user_uploads/2/aa/bb/c.png 404']);
    const log = w.sim.requests;
    expect(log.at(-3)).toMatchObject({
      method: 'POST',
      path: '/api/v1/messages',
      userId: w.ids.alice,
      params: { type: 'stream', to: 'general', topic: 't', content: 'x' },
    });
    expect(JSON.stringify(log)).not.toContain(w.alice.apiKey);
  });
});

describe('programmatic API', () => {
  it('throws SimError codes on misuse and SIM_REJECTED where Zulip would refuse', async () => {
    w = await world();
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(SimError);
        return (error as SimError).code;
      }
      return 'no error';
    };
    expect(codeOf(() => w.realm.addUser({ fullName: '' }))).toBe('SIM_INVALID_ARGUMENT');
    expect(codeOf(() => w.realm.addUser({ fullName: 'X', email: 'alice@acme.example' }))).toBe(
      'SIM_INVALID_ARGUMENT',
    );
    expect(codeOf(() => w.realm.addUser({ fullName: 'X', apiKey: 'short' }))).toBe('SIM_INVALID_ARGUMENT');
    expect(codeOf(() => w.realm.subscribe(999, 'general'))).toBe('SIM_NOT_FOUND');
    expect(codeOf(() => w.realm.deleteMessage(w.ids.alice, 999))).toBe('SIM_NOT_FOUND');
    expect(
      codeOf(() =>
        w.realm.sendMessage({
          senderId: w.ids.alice,
          type: 'stream',
          stream: 'nowhere',
          topic: 't',
          content: 'x',
        }),
      ),
    ).toBe('SIM_REJECTED');
    try {
      w.realm.sendMessage({
        senderId: w.ids.bob,
        type: 'stream',
        stream: 'general',
        topic: 't',
        content: '  ',
      });
    } catch (error) {
      expect((error as SimError).details).toMatchObject({
        zulipCode: 'BAD_REQUEST',
        msg: 'Message must not be empty',
      });
    }
    expect(codeOf(() => w.sim.credentials(999))).toBe('SIM_NOT_FOUND');
  });

  it('writes a zuliprc per the reference', async () => {
    w = await world();
    const c = w.sim.credentials('alice@acme.example');
    expect(w.sim.zuliprc(w.ids.alice)).toBe(
      `[api]\nemail=alice@acme.example\nkey=${c.apiKey}\nsite=${w.sim.url}\n`,
    );
    expect(c.apiKey).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  it('refuses bad options and a port in use', async () => {
    await expect(startZulipSim({ heartbeatIntervalMs: -1 })).rejects.toMatchObject({
      code: 'SIM_INVALID_ARGUMENT',
    });
    w = await world();
    const port = Number(new URL(w.sim.url).port);
    await expect(startZulipSim({ port })).rejects.toMatchObject({ code: 'SIM_LISTEN_FAILED' });
  });
});
