import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client, json, type World, world } from './helpers.js';

let w: World;
beforeEach(async () => {
  w = await world();
});
afterEach(async () => {
  await w.sim.close();
});

describe('server settings and authentication', () => {
  it('answers /server_settings without credentials, as Zulip 11.0 / FL421', async () => {
    const res = await fetch(`${w.sim.url}/api/v1/server_settings`);
    const body = await json(res);
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      result: 'success',
      zulip_version: '11.0',
      zulip_feature_level: 421,
      zulip_merge_base: '11.0',
      realm_url: w.sim.url,
      realm_uri: w.sim.url,
    });
  });

  it('answers every credential failure with 401 UNAUTHORIZED and WWW-Authenticate', async () => {
    const url = `${w.sim.url}/api/v1/users/me`;
    const basic = (s: string) => ({ authorization: `Basic ${Buffer.from(s).toString('base64')}` });
    const alice = w.sim.credentials(w.ids.alice);
    const bob = w.sim.credentials(w.ids.bob);
    const cases: [Record<string, string>, string][] = [
      [{}, 'Not logged in: API authentication or user session required'],
      [basic('no-colon-here'), 'Invalid authorization header for basic auth'],
      [basic(`${alice.email}:short`), 'Malformed API key'],
      [basic(`${alice.email}:${'x'.repeat(32)}`), 'Invalid API key'],
      [basic(`${alice.email}:${bob.apiKey}`), 'Invalid API key'],
    ];
    for (const [headers, msg] of cases) {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
      expect(await json(res)).toEqual({ result: 'error', msg, code: 'UNAUTHORIZED' });
    }
  });

  it('refuses a non-Basic scheme with 400 BAD_REQUEST', async () => {
    const res = await fetch(`${w.sim.url}/api/v1/users/me`, { headers: { authorization: 'Bearer abc' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      code: 'BAD_REQUEST',
      msg: 'This endpoint requires HTTP basic authentication.',
    });
  });

  it('authenticates against the delivery email, case-insensitively, and refuses deactivated users', async () => {
    const u = w.realm.addUser({
      fullName: 'Hidden',
      email: 'user77@acme.example',
      deliveryEmail: 'Real@Example.org',
    });
    const viaApiEmail = new Client(w.sim, 'user77@acme.example', u.apiKey);
    expect((await viaApiEmail.get('/users/me')).status).toBe(401);
    const viaReal = new Client(w.sim, 'real@EXAMPLE.org', u.apiKey);
    const me = await viaReal.get('/users/me');
    expect(me.status).toBe(200);
    expect(me.body.email).toBe('user77@acme.example');
    expect(me.body.delivery_email).toBe('Real@Example.org');
    w.realm.deactivateUser(u.userId);
    const gone = await viaReal.get('/users/me');
    expect(gone.status).toBe(401);
    expect(gone.body.msg).toBe('Account is deactivated');
  });

  it('answers unknown endpoints with 404 and wrong methods with 405', async () => {
    expect((await w.alice.get('/no/such/thing')).status).toBe(404);
    const r = await w.alice.call('PUT', '/messages');
    expect(r.status).toBe(405);
    expect(r.body.result).toBe('error');
  });
});

describe('request parsing', () => {
  it('accepts urlencoded and multipart bodies alike', async () => {
    const params = { type: 'stream', to: 'general', topic: 'encodings', content: 'hello' };
    const a = await w.alice.call('POST', '/messages', params, { encoding: 'form' });
    const b = await w.alice.call('POST', '/messages', params, { encoding: 'multipart' });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.body.id).toBeGreaterThan(a.body.id);
    expect(w.realm.message(b.body.id)).toMatchObject({ topic: 'encodings', content: 'hello' });
  });

  it('reads PATCH and DELETE parameters from the query string as zulip-js sends them', async () => {
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'before' });
    const r = await w.alice.patch(`/messages/${id}`, { content: 'after', message_id: id }, 'query');
    expect(r.status).toBe(200);
    expect(r.body.ignored_parameters_unsupported).toEqual(['message_id']);
    expect(w.realm.message(id)?.content).toBe('after');
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'tada' });
    const d = await w.bob.delete(`/messages/${id}/reactions`, { emoji_name: 'tada' }, 'query');
    expect(d.status).toBe(200);
    expect(w.realm.message(id)?.reactions).toEqual([]);
  });

  it('lets the body win over the query string', async () => {
    const url = new URL(`${w.sim.url}/api/v1/messages`);
    url.searchParams.set('topic', 'from-query');
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: w.alice.authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ type: 'stream', to: 'general', topic: 'from-body', content: 'x' }),
    });
    const body = await json(res);
    expect(w.realm.message(body.id)?.topic).toBe('from-body');
  });

  it('decodes JSON-encoded values and refuses bad JSON with BAD_REQUEST', async () => {
    const ok = await w.alice.get('/messages', { anchor: 'newest', num_before: '5', apply_markdown: 'false' });
    expect(ok.status).toBe(200);
    const bad = await w.alice.post('/messages/flags', { messages: '[1,', op: 'add', flag: 'read' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'BAD_REQUEST', msg: 'messages is not valid JSON' });
  });

  it('lists unknown parameters in ignored_parameters_unsupported, sorted', async () => {
    const r = await w.alice.get('/users/me', { zebra: 1, colour: 'red' });
    expect(r.body.ignored_parameters_unsupported).toEqual(['colour', 'zebra']);
    const clean = await w.alice.get('/users/me');
    expect(clean.body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  it('reports a missing parameter with REQUEST_VARIABLE_MISSING', async () => {
    const r = await w.alice.post('/messages', { type: 'stream', to: 'general', topic: 't' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      result: 'error',
      msg: "Missing 'content' argument",
      code: 'REQUEST_VARIABLE_MISSING',
      var_name: 'content',
    });
  });
});

describe('users', () => {
  it('lists members with bot fields only on bots', async () => {
    const r = await w.alice.get('/users');
    const members = r.body.members as Record<string, unknown>[];
    expect(members.map((m) => m.user_id)).toContain(w.ids.bot);
    const bot = members.find((m) => m.user_id === w.ids.bot);
    const alice = members.find((m) => m.user_id === w.ids.alice);
    expect(bot).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: w.ids.alice });
    expect(alice).not.toHaveProperty('bot_type');
    expect(alice).toMatchObject({
      full_name: 'Alice Ant',
      timezone: 'Europe/Oslo',
      role: 400,
      avatar_url: null,
    });
    expect(alice?.delivery_email).toBe('alice@acme.example');
    const seenByBob = members.find((m) => m.user_id === w.ids.carol);
    expect(seenByBob?.delivery_email).toBeNull();
  });

  it('serves /users/me flattened with max_message_id', async () => {
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    const r = await w.bob.get('/users/me');
    expect(r.body).toMatchObject({ user_id: w.ids.bob, full_name: 'Bob Bee', max_message_id: id });
  });

  it('finds users by id and by API email, and says No such user otherwise', async () => {
    expect((await w.alice.get(`/users/${w.ids.bob}`)).body.user.full_name).toBe('Bob Bee');
    expect((await w.alice.get('/users/bob@acme.example')).body.user.user_id).toBe(w.ids.bob);
    const missing = await w.alice.get('/users/9999');
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe('No such user');
  });

  it('names custom profile fields and returns profile data on request', async () => {
    const field = w.realm.addProfileField({ name: 'Team', hint: 'Your team' });
    const u = w.realm.addUser({ fullName: 'Dan Dev', profileData: { [field.id]: 'Platform' } });
    const fields = await w.alice.get('/realm/profile_fields');
    expect(fields.body.custom_fields).toEqual([
      expect.objectContaining({
        id: field.id,
        name: 'Team',
        type: 1,
        hint: 'Your team',
        field_data: '',
        order: 1,
      }),
    ]);
    const r = await w.alice.get(`/users/${u.userId}`, { include_custom_profile_fields: true });
    expect(r.body.user.profile_data[String(field.id)]).toEqual({
      value: 'Platform',
      rendered_value: '<p>Platform</p>',
    });
    const plain = await w.alice.get(`/users/${u.userId}`);
    expect(plain.body.user).not.toHaveProperty('profile_data');
  });
});

describe('streams, subscriptions and topics', () => {
  it('lists the members of a stream the caller can access, and no other', async () => {
    const members = await w.bob.get(`/streams/${w.ids.design}/members`);
    expect(members.status).toBe(200);
    expect(members.body.subscribers).toEqual([w.ids.alice, w.ids.bob].sort((a, b) => a - b));
    const hidden = await w.bot.get(`/streams/${w.ids.secret}/members`);
    expect(hidden.status).toBe(400);
    expect(hidden.body).toMatchObject({ code: 'BAD_REQUEST', msg: 'Invalid channel ID' });
  });

  it('shows a private stream only to its subscribers', async () => {
    const names = async (c: Client) =>
      ((await c.get('/streams')).body.streams as { name: string }[]).map((s) => s.name).sort();
    expect(await names(w.bot)).toEqual(['design', 'general', 'shared']);
    expect(await names(w.bob)).toEqual(['design', 'general']);
    expect(await names(w.alice)).toEqual(['design', 'general', 'secret', 'shared']);
    expect((await w.bot.get(`/streams/${w.ids.secret}`)).body.msg).toBe('Invalid channel ID');
    expect((await w.bot.get('/get_stream_id', { stream: 'secret' })).body).toMatchObject({
      code: 'BAD_REQUEST',
      msg: "Invalid channel name 'secret'",
    });
    expect((await w.bot.get('/get_stream_id', { stream: 'GENERAL' })).body.stream_id).toBe(w.ids.general);
  });

  it('lists the caller subscriptions with subscribers on request', async () => {
    const r = await w.bob.get('/users/me/subscriptions', { include_subscribers: true });
    const subs = r.body.subscriptions as Record<string, unknown>[];
    expect(subs.map((s) => s.name).sort()).toEqual(['design', 'general']);
    const design = subs.find((s) => s.name === 'design');
    expect(design).toMatchObject({
      is_muted: false,
      in_home_view: true,
      pin_to_top: false,
      desktop_notifications: null,
    });
    expect(design?.subscribers).toEqual([w.ids.alice, w.ids.bob]);
    expect(design?.color).toMatch(/^#[0-9a-f]{6}$/);
  });

  it('subscribes, creating missing streams, keyed by user id strings', async () => {
    const r = await w.alice.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }, { name: 'release-notes', description: 'Ship log' }],
      principals: [w.ids.alice, w.ids.carol],
    });
    expect(r.status).toBe(200);
    expect(r.body.subscribed).toEqual({
      [String(w.ids.carol)]: ['release-notes'],
      [String(w.ids.alice)]: ['release-notes'],
    });
    expect(r.body.already_subscribed).toEqual({
      [String(w.ids.alice)]: ['general'],
      [String(w.ids.carol)]: ['general'],
    });
    expect(r.body).not.toHaveProperty('unauthorized');
    const stream = w.realm.stream('release-notes');
    expect(stream).toMatchObject({ description: 'Ship log', creatorId: w.ids.alice, inviteOnly: false });
    // Zulip announces the new channel in it, and tells Carol who subscribed her.
    const first = w.realm.message(stream?.firstMessageId as number);
    expect(first?.topic).toBe('channel events');
    expect(first?.content).toContain('**Public** channel created by @_**Alice Ant|');
    const dms = await w.carol.get('/messages', {
      anchor: 'newest',
      num_before: 5,
      narrow: [{ operator: 'is', operand: 'dm' }],
    });
    expect(dms.body.messages.at(-1).content).toContain('subscribed you to the channel');
  });

  it('reports inaccessible streams as fatal or in unauthorized', async () => {
    const fatal = await w.bob.post('/users/me/subscriptions', { subscriptions: [{ name: 'secret' }] });
    expect(fatal.status).toBe(400);
    expect(fatal.body.msg).toBe('Unable to access channel (secret).');
    const soft = await w.bob.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'secret' }],
      authorization_errors_fatal: false,
    });
    expect(soft.body).toMatchObject({ subscribed: {}, already_subscribed: {}, unauthorized: ['secret'] });
  });

  it('refuses an unknown principal with BAD_REQUEST', async () => {
    const r = await w.alice.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'general' }],
      principals: [999],
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('BAD_REQUEST');
  });

  it('unsubscribes, and calls a nonexistent stream BAD_REQUEST, not STREAM_DOES_NOT_EXIST', async () => {
    const r = await w.bob.delete('/users/me/subscriptions', { subscriptions: ['design', 'design'] });
    expect(r.body).toMatchObject({ removed: ['design'], not_removed: ['design'] });
    const missing = await w.bob.delete('/users/me/subscriptions', { subscriptions: ['nowhere'] });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 'BAD_REQUEST', msg: 'Channel(s) (nowhere) do not exist' });
  });

  it('lists topics newest first, and only visible ones on protected-history streams', async () => {
    await w.alice.send({ type: 'stream', to: 'general', topic: 'lunch', content: 'a' });
    const deploy = await w.alice.send({ type: 'stream', to: 'general', topic: 'deploys', content: 'b' });
    const lunch = await w.bob.send({ type: 'stream', to: 'general', topic: 'Lunch', content: 'c' });
    const r = await w.bob.get(`/users/me/${w.ids.general}/topics`);
    expect(r.body.topics).toEqual([
      { name: 'Lunch', max_id: lunch },
      { name: 'deploys', max_id: deploy },
    ]);
    await w.alice.send({ type: 'stream', to: 'secret', topic: 'early', content: 'before carol' });
    w.realm.subscribe(w.ids.carol, 'secret');
    await w.alice.send({ type: 'stream', to: 'secret', topic: 'later', content: 'after carol' });
    const carol = await w.carol.get(`/users/me/${w.ids.secret}/topics`);
    expect(carol.body.topics.map((t: { name: string }) => t.name)).toEqual(['later']);
    expect((await w.bob.get(`/users/me/${w.ids.secret}/topics`)).body.msg).toBe('Invalid channel ID');
  });
});
