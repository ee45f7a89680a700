import { afterEach, describe, expect, it } from 'vitest';
import {
  API_KEY,
  EMAIL,
  fakeClock,
  mockClient,
  mockRealm,
  ok,
  paramsOf,
  recordingLogger,
  streamMessage,
  zulipError,
} from '../../test/helpers/mock-realm.js';
import { ZmcpError, ZulipApiError } from '../errors.js';
import { ZulipClient } from './zulip-client.js';

const open: ZulipClient[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

function setup(overrides: Parameters<typeof mockClient>[1] = {}) {
  const { agent, pool } = mockRealm();
  const time = fakeClock();
  const log = recordingLogger();
  const client = mockClient(agent, { clock: time.clock, logger: log.logger, ...overrides });
  open.push(client);
  return { agent, pool, client, time, log };
}

async function failure(p: Promise<unknown>): Promise<ZmcpError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ZmcpError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

describe('request encoding', () => {
  it('sends GET parameters in the query, non-strings JSON-encoded, with Basic auth', async () => {
    const { pool, client } = setup();
    let seen: { path: string; auth: string | undefined } | undefined;
    pool.intercept({ path: (p) => p.startsWith('/api/v1/messages?'), method: 'GET' }).reply((opts) => {
      const headers = opts.headers as Record<string, string>;
      seen = { path: opts.path, auth: headers.authorization };
      return { statusCode: 200, data: ok({ messages: [streamMessage({ id: 5 })], found_newest: true }) };
    });
    const res = await client.getMessages({
      anchor: 'newest',
      numBefore: 10,
      narrow: [{ operator: 'channel', operand: 'general' }],
      applyMarkdown: false,
    });
    expect(res.messages[0]?.id).toBe(5);
    const params = new URLSearchParams(seen?.path.split('?')[1]);
    expect(params.get('anchor')).toBe('newest');
    expect(params.get('num_before')).toBe('10');
    expect(params.get('num_after')).toBe('0');
    expect(params.get('apply_markdown')).toBe('false');
    expect(JSON.parse(params.get('narrow') ?? '')).toEqual([{ operator: 'channel', operand: 'general' }]);
    expect(seen?.auth).toBe(`Basic ${Buffer.from(`${EMAIL}:${API_KEY}`).toString('base64')}`);
  });

  it('sends POST, PATCH and DELETE parameters form-encoded in the body', async () => {
    const { pool, client } = setup();
    const bodies: Record<string, URLSearchParams> = {};
    const record =
      (key: string, data: Record<string, unknown>) =>
      (opts: { path: string; body?: unknown; headers?: unknown }) => {
        expect((opts.headers as Record<string, string>)['content-type']).toBe(
          'application/x-www-form-urlencoded',
        );
        expect(opts.path).not.toContain('?');
        bodies[key] = paramsOf(opts);
        return { statusCode: 200, data: ok(data) };
      };
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).reply(record('send', { id: 77 }));
    pool.intercept({ path: '/api/v1/messages/77', method: 'PATCH' }).reply(record('edit', {}));
    pool.intercept({ path: '/api/v1/messages/77/reactions', method: 'DELETE' }).reply(record('unreact', {}));
    pool
      .intercept({ path: '/api/v1/users/me/subscriptions', method: 'DELETE' })
      .reply(record('unsub', { removed: ['x'], not_removed: [] }));

    await client.sendMessage({ type: 'stream', to: 'general', topic: 'deploys', content: 'hi <b>' });
    await client.updateMessage(77, {
      topic: 'moved',
      propagateMode: 'change_all',
      sendNotificationToOldThread: false,
    });
    await client.removeReaction(77, { emojiName: 'shipit', reactionType: 'realm_emoji' });
    await client.unsubscribe({ subscriptions: ['x'] });

    expect(Object.fromEntries(bodies.send ?? [])).toEqual({
      type: 'stream',
      to: '"general"',
      topic: 'deploys',
      content: 'hi <b>',
    });
    expect(Object.fromEntries(bodies.edit ?? [])).toEqual({
      topic: 'moved',
      propagate_mode: 'change_all',
      send_notification_to_old_thread: 'false',
    });
    expect(Object.fromEntries(bodies.unreact ?? [])).toEqual({
      emoji_name: 'shipit',
      reaction_type: 'realm_emoji',
    });
    expect(bodies.unsub?.get('subscriptions')).toBe('["x"]');
  });

  it('sends direct messages to a JSON list of user ids', async () => {
    const { pool, client } = setup();
    let params: URLSearchParams | undefined;
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).reply((opts) => {
      params = paramsOf(opts);
      return { statusCode: 200, data: ok({ id: 9 }) };
    });
    await expect(client.sendMessage({ type: 'direct', to: [8, 21], content: 'hey' })).resolves.toMatchObject({
      id: 9,
    });
    expect(params?.get('type')).toBe('direct');
    expect(params?.get('to')).toBe('[8,21]');
  });

  it('fetches /server_settings without credentials and remembers the feature level', async () => {
    const { pool, client } = setup();
    let auth: string | undefined = 'unset';
    pool.intercept({ path: '/api/v1/server_settings', method: 'GET' }).reply((opts) => {
      auth = (opts.headers as Record<string, string>).authorization;
      return { statusCode: 200, data: ok({ zulip_version: '11.0', zulip_feature_level: 421 }) };
    });
    expect(await client.getFeatureLevel()).toBe(421);
    expect(await client.getFeatureLevel()).toBe(421); // no second request: the intercept was single-use
    expect(auth).toBeUndefined();
  });

  it('refuses bad arguments before sending anything', async () => {
    const { client } = setup();
    const cases: Promise<unknown>[] = [
      client.getMessages({ numBefore: 4000, numAfter: 1001 }),
      client.getMessages({ numBefore: -1 }),
      client.getMessages({ anchor: 'sideways' as never }),
      client.getMessages({ messageIds: [1], anchor: 5 }),
      client.getMessage(0),
      client.getMessage(1.5),
      client.sendMessage({ type: 'stream', to: 'general', topic: 't', content: '' }),
      client.sendMessage({ type: 'direct', to: [], content: 'x' }),
      client.sendMessage({ type: 'direct', to: [1, 'a@b.c'] as never, content: 'x' }),
      client.sendMessage({ type: 'broadcast', to: 'x', content: 'x' } as never),
      client.updateMessage(5, {}),
      client.updateMessageFlags({ messages: [1], op: 'add', flag: 'mentioned' as never }),
      client.updateMessageFlags({ messages: [1], op: 'flip' as never, flag: 'read' }),
      client.getUserByEmail('not an email'),
      client.setTyping({ op: 'start', type: 'direct', to: [] }),
      client.getEvents({ queueId: '', lastEventId: -1 }),
      client.downloadUpload('/user_uploads/1/a.txt', { maxBytes: -1 }),
    ];
    for (const p of cases) expect((await failure(p)).code).toBe('CORE_INVALID_ARGUMENT');
  });
});

describe('construction', () => {
  it('validates the site, email and key without echoing the key', () => {
    const make = (o: Partial<ConstructorParameters<typeof ZulipClient>[0]>) => () =>
      new ZulipClient({ site: 'https://zulip.example', email: EMAIL, apiKey: API_KEY, ...o });
    expect(make({ site: 'http://zulip.example' })).toThrow(
      expect.objectContaining({ code: 'CORE_INSECURE_URL' }),
    );
    expect(make({ site: 'ftp://zulip.example' })).toThrow(
      expect.objectContaining({ code: 'CORE_INSECURE_URL' }),
    );
    expect(make({ email: 'no-at-sign' })).toThrow(expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }));
    const badKey = `${API_KEY} extra`;
    try {
      make({ apiKey: badKey })();
      expect.unreachable();
    } catch (err) {
      expect((err as ZmcpError).code).toBe('CORE_INVALID_ARGUMENT');
      expect(JSON.stringify(err) + String(err)).not.toContain(API_KEY);
    }
    expect(make({ site: 'http://zulip.example', allowInsecureHttp: true })).not.toThrow();
    expect(make({ site: 'http://127.0.0.1:9991/api/v1/' })().site).toBe('http://127.0.0.1:9991');
  });

  it('keeps the key out of inspection and JSON', async () => {
    const { inspect } = await import('node:util');
    const { client } = setup();
    expect(inspect(client, { depth: 5, showHidden: true })).not.toContain(API_KEY);
    expect(JSON.stringify(client)).not.toContain(API_KEY);
  });
});

describe('errors', () => {
  it('maps 401 to CORE_UNAUTHORIZED without retrying', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: '/api/v1/users/me' }).reply(401, zulipError('UNAUTHORIZED', 'Invalid API key'), {
      headers: { 'www-authenticate': 'Basic' },
    });
    const err = await failure(client.getOwnUser());
    expect(err).toBeInstanceOf(ZulipApiError);
    expect(err).toMatchObject({ code: 'CORE_UNAUTHORIZED', status: 401, zulipCode: 'UNAUTHORIZED' });
    expect(err.message).toContain(EMAIL);
  });

  it("keeps Zulip's own code and extra fields on a 400", async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v1/messages', method: 'POST' })
      .reply(
        400,
        zulipError('STREAM_DOES_NOT_EXIST', "Channel 'nowhere' does not exist", { stream: 'nowhere' }),
      );
    pool
      .intercept({ path: (p) => p.startsWith('/api/v1/messages?') })
      .reply(400, zulipError('BAD_NARROW', 'Invalid narrow operator: unknown channel', { desc: 'x' }));
    const notFound = await failure(
      client.sendMessage({ type: 'stream', to: 'nowhere', topic: 't', content: 'x' }),
    );
    expect(notFound).toMatchObject({
      code: 'CORE_NOT_FOUND',
      status: 400,
      zulipCode: 'STREAM_DOES_NOT_EXIST',
      body: { code: 'STREAM_DOES_NOT_EXIST', stream: 'nowhere' },
    });
    const badNarrow = await failure(client.getMessages({ narrow: [{ operator: 'channel', operand: 'x' }] }));
    expect(badNarrow).toMatchObject({
      code: 'CORE_BAD_REQUEST',
      zulipCode: 'BAD_NARROW',
      body: { desc: 'x' },
    });
  });

  it('retries a GET after 5xx with jittered, growing backoff, then succeeds', async () => {
    const { pool, client, time } = setup({ retry: { baseDelayMs: 100 } });
    pool.intercept({ path: '/api/v1/users/me' }).reply(502, '<html>bad gateway</html>').times(2);
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(200, ok({ user_id: 21, email: EMAIL, full_name: 'Bot' }));
    await expect(client.getOwnUser()).resolves.toMatchObject({ user_id: 21 });
    expect(time.sleeps).toEqual([75, 150]); // random 0.5 -> three quarters of 100, then of 200
  });

  it('gives up after maxAttempts with CORE_SERVER_ERROR', async () => {
    const { pool, client, time } = setup({ retry: { maxAttempts: 3, baseDelayMs: 10 } });
    pool.intercept({ path: '/api/v1/users/me' }).reply(503, 'down').times(3);
    const err = await failure(client.getOwnUser());
    expect(err).toMatchObject({ code: 'CORE_SERVER_ERROR', status: 503 });
    expect(time.sleeps).toHaveLength(2);
  });

  it('never retries a send after a 5xx or a torn exchange', async () => {
    const { pool, client, time } = setup();
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).reply(500, 'oops');
    const err = await failure(client.sendMessage({ type: 'stream', to: 'g', topic: 't', content: 'x' }));
    expect(err.code).toBe('CORE_SERVER_ERROR');
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).replyWithError(reset);
    const torn = await failure(client.sendMessage({ type: 'stream', to: 'g', topic: 't', content: 'x' }));
    expect(torn).toMatchObject({ code: 'CORE_NETWORK', details: { phase: 'exchange' } });
    expect(time.sleeps).toEqual([]);
  });

  it('retries a send whose connection was refused: nothing reached Zulip', async () => {
    const { pool, client, time } = setup();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).replyWithError(refused);
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).reply(200, ok({ id: 3 }));
    await expect(
      client.sendMessage({ type: 'stream', to: 'g', topic: 't', content: 'x' }),
    ).resolves.toMatchObject({
      id: 3,
    });
    expect(time.sleeps).toHaveLength(1);
  });

  it('retries a GET after a torn connection', async () => {
    const { pool, client } = setup();
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    pool.intercept({ path: '/api/v1/users/me' }).replyWithError(reset);
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, ok({ user_id: 1, email: EMAIL, full_name: 'B' }));
    await expect(client.getOwnUser()).resolves.toMatchObject({ user_id: 1 });
  });

  it('turns truncated JSON into CORE_BAD_RESPONSE (retried for a GET, then reported)', async () => {
    const { pool, client, time } = setup({ retry: { maxAttempts: 2 } });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, '{"result":"success","user_id":').times(2);
    const err = await failure(client.getOwnUser());
    expect(err).toMatchObject({ code: 'CORE_BAD_RESPONSE', details: { reason: 'unparseable' } });
    expect(err.cause).toBeInstanceOf(SyntaxError);
    expect(time.sleeps).toHaveLength(1);
  });

  it('reports a missing required field as CORE_BAD_RESPONSE with the zod error as cause', async () => {
    const { pool, client } = setup();
    const broken = streamMessage({ id: 4 });
    delete broken.sender_id;
    pool.intercept({ path: '/api/v1/messages/4?apply_markdown=false' }).reply(200, ok({ message: broken }));
    const err = await failure(client.getMessage(4, { applyMarkdown: false }));
    expect(err).toMatchObject({ code: 'CORE_BAD_RESPONSE', details: { reason: 'schema' } });
    expect(err.message).toContain('message.sender_id');
    expect((err.cause as Error).name).toBe('ZodError');
  });

  it('lets unknown fields pass through validated objects', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v1/messages/4' })
      .reply(200, ok({ message: streamMessage({ id: 4, brand_new_field: { x: 1 } }), raw_content: 'r' }));
    const res = await client.getMessage(4);
    expect(res.message.brand_new_field).toEqual({ x: 1 });
  });

  it('maps a 200 that says result=error to CORE_BAD_REQUEST', async () => {
    const { pool, client } = setup();
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, zulipError('BAD_REQUEST', 'odd'));
    expect(await failure(client.getOwnUser())).toMatchObject({
      code: 'CORE_BAD_REQUEST',
      zulipCode: 'BAD_REQUEST',
    });
  });

  it('never puts the API key in an error or a log line, even when the server echoes it', async () => {
    const { pool, client, log } = setup({ retry: { maxAttempts: 2 } });
    const b64 = Buffer.from(`${EMAIL}:${API_KEY}`).toString('base64');
    pool.intercept({ path: '/api/v1/users/me' }).reply(503, 'x');
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(
        401,
        zulipError('UNAUTHORIZED', `Invalid API key ${API_KEY} (${b64})`, { key: API_KEY, [API_KEY]: 1 }),
      );
    const err = await failure(client.getOwnUser());
    const everything = [
      err.message,
      JSON.stringify(err),
      JSON.stringify((err as ZulipApiError).body),
      JSON.stringify(err.details),
      String(err.stack),
      ...log.lines,
    ].join('\n');
    expect(everything).not.toContain(API_KEY);
    expect(everything).not.toContain(b64);
    expect(err.message).toContain('[redacted]');
  });
});

describe('deadlines and cancellation', () => {
  it('fails with CORE_TIMEOUT when Zulip answers after the deadline', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(200, ok({ user_id: 1, email: EMAIL, full_name: 'B' }))
      .delay(500);
    const err = await failure(client.getOwnUser({ timeoutMs: 20 }));
    expect(err).toMatchObject({ code: 'CORE_TIMEOUT', details: { timeoutMs: 20 } });
  });

  it("fails with CORE_ABORTED when the caller's signal fires", async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(200, ok({ user_id: 1, email: EMAIL, full_name: 'B' }))
      .delay(500);
    const controller = new AbortController();
    const pending = client.getOwnUser({ signal: controller.signal });
    controller.abort();
    expect((await failure(pending)).code).toBe('CORE_ABORTED');
    expect((await failure(client.getOwnUser({ signal: AbortSignal.abort() }))).code).toBe('CORE_ABORTED');
  });

  it('refuses a timeout that is not a positive number', async () => {
    const { client } = setup();
    expect((await failure(client.getOwnUser({ timeoutMs: 0 }))).code).toBe('CORE_INVALID_ARGUMENT');
  });

  it('ends calls in flight with CORE_CLOSED on close, and refuses later ones', async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(200, ok({ user_id: 1, email: EMAIL, full_name: 'B' }))
      .delay(500);
    const pending = client.getOwnUser();
    await client.close();
    expect((await failure(pending)).code).toBe('CORE_CLOSED');
    expect((await failure(client.getOwnUser())).code).toBe('CORE_CLOSED');
    expect(client.closed).toBe(true);
  });
});

describe('rate limits', () => {
  it('waits out a 429 per Retry-After, then succeeds', async () => {
    const { pool, client, time } = setup();
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(429, zulipError('RATE_LIMIT_HIT', 'API usage exceeded rate limit', { 'retry-after': 2.5 }), {
        headers: { 'retry-after': '2.5' },
      });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, ok({ user_id: 1, email: EMAIL, full_name: 'B' }));
    await expect(client.getOwnUser({ timeoutMs: 60_000 })).resolves.toMatchObject({ user_id: 1 });
    expect(time.sleeps).toEqual([2500]);
  });

  it('retries a send after a 429: the request was not processed', async () => {
    const { pool, client, time } = setup();
    pool
      .intercept({ path: '/api/v1/messages', method: 'POST' })
      .reply(429, zulipError('RATE_LIMIT_HIT', 'limit', { 'retry-after': 0.25 }));
    pool.intercept({ path: '/api/v1/messages', method: 'POST' }).reply(200, ok({ id: 1 }));
    await expect(
      client.sendMessage({ type: 'stream', to: 'g', topic: 't', content: 'x' }),
    ).resolves.toMatchObject({
      id: 1,
    });
    expect(time.sleeps).toEqual([250]);
  });

  it('gives up on a 429 storm with CORE_RATE_LIMITED and retryAfterMs', async () => {
    const { pool, client, time } = setup({ retry: { maxRateLimitWaits: 2 } });
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(429, zulipError('RATE_LIMIT_HIT', 'limit'), { headers: { 'retry-after': '1' } })
      .times(3);
    const err = await failure(client.getOwnUser({ timeoutMs: 60_000 }));
    expect(err).toMatchObject({
      code: 'CORE_RATE_LIMITED',
      status: 429,
      retryAfter: 1,
      details: { retryAfterMs: 1000 },
    });
    expect(time.sleeps).toEqual([1000, 1000]);
  });

  it('does not sleep past the deadline: a long Retry-After fails at once', async () => {
    const { pool, client, time } = setup();
    pool
      .intercept({ path: '/api/v1/users/me' })
      .reply(429, zulipError('RATE_LIMIT_HIT', 'limit'), { headers: { 'retry-after': '30' } });
    const err = await failure(client.getOwnUser({ timeoutMs: 5_000 }));
    expect(err).toMatchObject({ code: 'CORE_RATE_LIMITED', details: { retryAfterMs: 30_000 } });
    expect(time.sleeps).toEqual([]);
    // The block is remembered: the next call is refused before anything is sent.
    const next = await failure(client.getOwnUser({ timeoutMs: 5_000 }));
    expect(next.code).toBe('CORE_RATE_LIMITED');
  });

  it('slows down before Zulip says no as X-RateLimit-Remaining runs low', async () => {
    const { pool, client, time } = setup();
    const nowS = time.clock.now() / 1000;
    const headers = (remaining: number) => ({
      'x-ratelimit-limit': '200',
      'x-ratelimit-remaining': String(remaining),
      'x-ratelimit-reset': String(nowS + 10),
      date: new Date(time.clock.now()).toUTCString(),
    });
    const me = ok({ user_id: 1, email: EMAIL, full_name: 'B' });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, me, { headers: headers(150) });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, me, { headers: headers(3) });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, me, { headers: headers(0) });
    pool.intercept({ path: '/api/v1/users/me' }).reply(200, me);
    await client.getOwnUser({ timeoutMs: 60_000 }); // learns 150 left: plenty
    expect(time.sleeps).toEqual([]);
    await client.getOwnUser({ timeoutMs: 60_000 }); // learns 3 left
    expect(time.sleeps).toEqual([]);
    await client.getOwnUser({ timeoutMs: 60_000 }); // paced: time to reset shared by the 3 left
    expect(time.sleeps).toHaveLength(1);
    expect(time.sleeps[0]).toBeGreaterThan(2000);
    await client.getOwnUser({ timeoutMs: 60_000 }); // bucket empty: wait for the reset
    expect(time.sleeps).toHaveLength(2);
    expect((time.sleeps[0] ?? 0) + (time.sleeps[1] ?? 0)).toBeGreaterThanOrEqual(9_000);
  });
});

describe('read-only mode', () => {
  it('refuses every non-GET before anything is sent', async () => {
    // The mock has no interceptors and no network: anything sent would fail differently.
    const { client } = setup({ readOnly: true });
    const attempts: Promise<unknown>[] = [
      client.sendMessage({ type: 'stream', to: 'g', topic: 't', content: 'x' }),
      client.register(),
      client.deleteQueue('q'),
      client.updateMessage(1, { content: 'x' }),
      client.deleteMessage(1),
      client.addReaction(1, { emojiName: 'tada' }),
      client.removeReaction(1, { emojiName: 'tada' }),
      client.updateMessageFlags({ messages: [1], op: 'add', flag: 'read' }),
      client.updateMessageFlagsForNarrow({
        anchor: 'newest',
        numBefore: 10,
        numAfter: 0,
        narrow: [],
        op: 'add',
        flag: 'read',
      }),
      client.subscribe({ subscriptions: [{ name: 'x' }] }),
      client.unsubscribe({ subscriptions: ['x'] }),
      client.setTyping({ op: 'start', type: 'direct', to: [1] }),
    ];
    for (const p of attempts) expect((await failure(p)).code).toBe('CORE_READ_ONLY');
    let pulled = false;
    const body = (async function* () {
      pulled = true;
      yield new Uint8Array(1);
    })();
    const upload = await failure(
      client.uploadFile({ filename: 'a', contentType: 'text/plain', size: 1, body }),
    );
    expect(upload.code).toBe('CORE_READ_ONLY');
    expect(pulled).toBe(false);
  });
});
