import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type World, world } from './helpers.js';

let w: World;
beforeEach(async () => {
  w = await world();
});
afterEach(async () => {
  await w.sim.close();
});

const NEWEST = 10000000000000000;
const inGeneral = [{ operator: 'channel', operand: 'general' }];

async function fill(n: number, topic = 'bulk'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(
      w.realm.sendMessage({
        senderId: w.ids.alice,
        type: 'stream',
        stream: 'general',
        topic,
        content: `m${i}`,
      }),
    );
  }
  return ids;
}

describe('anchors and found_* flags', () => {
  it('echoes "newest" as 10000000000000000 and sets found_newest', async () => {
    const ids = await fill(5);
    const r = await w.bob.get('/messages', {
      anchor: 'newest',
      num_before: 3,
      num_after: 7,
      narrow: inGeneral,
    });
    expect(r.text).toContain('"anchor":10000000000000000');
    expect(r.body).toMatchObject({
      anchor: NEWEST,
      found_anchor: false,
      found_newest: true,
      found_oldest: false,
    });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual(ids.slice(2));
    const all = await w.bob.get('/messages', { anchor: 'newest', num_before: 10, narrow: inGeneral });
    expect(all.body.found_oldest).toBe(true);
  });

  it('resolves "oldest" to 0 with found_oldest, counting num_after only', async () => {
    const ids = await fill(5);
    const r = await w.bob.get('/messages', {
      anchor: 'oldest',
      num_before: 4,
      num_after: 2,
      narrow: inGeneral,
    });
    expect(r.body).toMatchObject({ anchor: 0, found_oldest: true, found_newest: false, found_anchor: false });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual(ids.slice(0, 2));
  });

  it('fetches around an integer anchor and reports found_anchor', async () => {
    const ids = await fill(7);
    const mid = ids[3] as number;
    const r = await w.bob.get('/messages', { anchor: mid, num_before: 2, num_after: 2, narrow: inGeneral });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual(ids.slice(1, 6));
    expect(r.body).toMatchObject({
      anchor: mid,
      found_anchor: true,
      found_oldest: false,
      found_newest: false,
    });
    const edge = await w.bob.get('/messages', {
      anchor: mid,
      num_before: 0,
      num_after: 5,
      include_anchor: false,
      narrow: inGeneral,
    });
    expect(edge.body.messages.map((m: { id: number }) => m.id)).toEqual(ids.slice(4));
    expect(edge.body).toMatchObject({ found_anchor: false, found_newest: true });
  });

  it('keeps the include_anchor quirk: with no neighbours the anchor still comes back', async () => {
    const ids = await fill(3);
    const r = await w.bob.get('/messages', {
      anchor: ids[1],
      num_before: 0,
      num_after: 0,
      include_anchor: false,
    });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual([ids[1]]);
    expect(r.body.found_anchor).toBe(true);
  });

  it('refuses excluding the anchor in the middle of a range', async () => {
    const r = await w.bob.get('/messages', { anchor: 1, num_before: 1, num_after: 1, include_anchor: false });
    expect(r.status).toBe(400);
    expect(r.body.msg).toBe('The anchor can only be excluded at an end of the range');
  });

  it('resolves first_unread to the oldest unread match, else to newest', async () => {
    const ids = await fill(4);
    await w.bob.post('/messages/flags', { messages: ids.slice(0, 2), op: 'add', flag: 'read' });
    const r = await w.bob.get('/messages', {
      anchor: 'first_unread',
      num_before: 1,
      num_after: 1,
      narrow: inGeneral,
    });
    expect(r.body.anchor).toBe(ids[2]);
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual(ids.slice(1, 4));
    await w.bob.post('/messages/flags', { messages: ids, op: 'add', flag: 'read' });
    const none = await w.bob.get('/messages', {
      anchor: 'first_unread',
      num_before: 2,
      num_after: 2,
      narrow: inGeneral,
    });
    expect(none.body).toMatchObject({ anchor: NEWEST, found_newest: true });
  });

  it('validates anchors and the 5000-message cap', async () => {
    const missing = await w.bob.get('/messages', { num_before: 1 });
    expect(missing.body).toEqual({ result: 'error', msg: "Missing 'anchor' argument.", code: 'BAD_REQUEST' });
    expect((await w.bob.get('/messages', { anchor: 'sideways' })).body.msg).toBe('Invalid anchor');
    expect((await w.bob.get('/messages', { anchor: -5 })).body.anchor).toBe(0);
    const big = await w.bob.get('/messages', { anchor: 'newest', num_before: 4000, num_after: 1001 });
    expect(big.body).toMatchObject({
      code: 'BAD_REQUEST',
      msg: 'Too many messages requested (maximum 5000).',
    });
    const neg = await w.bob.get('/messages', { anchor: 'newest', num_before: -5 });
    expect(neg.body).toMatchObject({ code: 'REQUEST_VARIABLE_INVALID', var_name: 'num_before' });
  });

  it('fetches message_ids without anchor fields and with every found_* false', async () => {
    const ids = await fill(3);
    const r = await w.bob.get('/messages', { message_ids: [ids[2], ids[0], 999] });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual([ids[0], ids[2]]);
    expect(r.body).toMatchObject({ found_anchor: false, found_oldest: false, found_newest: false });
    expect(r.body).not.toHaveProperty('anchor');
    const mixed = await w.bob.get('/messages', { message_ids: [1], anchor: 'newest' });
    expect(mixed.status).toBe(400);
  });
});

describe('narrows', () => {
  it('accepts object and legacy forms, and channel/stream spellings', async () => {
    await fill(2);
    const forms = [
      [['stream', 'general']],
      [['channel', 'General']],
      [{ operator: 'channel', operand: w.ids.general }],
      [{ operator: 'stream', operand: 'general' }],
    ];
    for (const narrow of forms) {
      const r = await w.bob.get('/messages', { anchor: 'newest', num_before: 10, narrow });
      expect(r.status).toBe(200);
      expect(r.body.messages).toHaveLength(2);
    }
  });

  it('calls a legacy pair with an int operand a plain 400, not BAD_NARROW', async () => {
    const r = await w.bob.get('/messages', { anchor: 'newest', narrow: [['stream', 12]] });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('BAD_REQUEST');
  });

  it('reports unknown streams, operators, operands and stream+DM mixes as BAD_NARROW with desc', async () => {
    const cases: [unknown[], string][] = [
      [[{ operator: 'channel', operand: 'nowhere' }], 'unknown channel nowhere'],
      [[{ operator: 'frobnicate', operand: 'x' }], 'unknown operator frobnicate'],
      [[{ operator: 'is', operand: 'sleepy' }], "unknown 'is' operand sleepy"],
      [[{ operator: 'has', operand: 'cake' }], "unknown 'has' operand cake"],
      [[{ operator: 'sender', operand: 'nobody@acme.example' }], 'unknown user nobody@acme.example'],
      [
        [
          { operator: 'channel', operand: 'general' },
          { operator: 'dm', operand: [w.ids.bob] },
        ],
        'No message can be both a channel message and direct message',
      ],
    ];
    for (const [narrow, desc] of cases) {
      const r = await w.alice.get('/messages', { anchor: 'newest', narrow });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        result: 'error',
        code: 'BAD_NARROW',
        msg: `Invalid narrow operator: ${desc}`,
        desc,
      });
    }
  });

  it('narrows to a topic, a sender, a DM conversation, and negations', async () => {
    const a = await w.alice.send({ type: 'stream', to: 'general', topic: 'Deploys', content: 'one' });
    const b = await w.bob.send({ type: 'stream', to: 'general', topic: 'deploys', content: 'two' });
    await w.bob.send({ type: 'stream', to: 'general', topic: 'lunch', content: 'three' });
    const dm = await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'psst' });
    const group = await w.alice.send({ type: 'direct', to: [w.ids.bob, w.ids.carol], content: 'all' });
    const ids = async (narrow: unknown[]) =>
      (await w.bob.get('/messages', { anchor: 'newest', num_before: 50, narrow })).body.messages.map(
        (m: { id: number }) => m.id,
      );
    expect(await ids([...inGeneral, { operator: 'topic', operand: 'DEPLOYS' }])).toEqual([a, b]);
    expect(
      await ids([
        { operator: 'sender', operand: 'bob@acme.example' },
        { operator: 'topic', operand: 'lunch', negated: true },
      ]),
    ).toEqual([b]);
    expect(await ids([{ operator: 'dm', operand: [w.ids.alice] }])).toEqual([dm]);
    expect(await ids([['pm-with', 'alice@acme.example']])).toEqual([dm]);
    expect(await ids([{ operator: 'dm', operand: 'alice@acme.example,carol@acme.example' }])).toEqual([
      group,
    ]);
    expect(await ids([{ operator: 'dm-including', operand: w.ids.carol }])).toEqual([group]);
    expect(await ids([{ operator: 'is', operand: 'dm' }])).toEqual([dm, group]);
    expect(await ids([{ operator: 'id', operand: String(b) }])).toEqual([b]);
  });

  it('searches content and topic, adding match_content and match_subject', async () => {
    await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 'release',
      content: 'the **rocket** launched',
    });
    await w.alice.send({ type: 'stream', to: 'general', topic: 'other', content: 'nothing here' });
    const r = await w.bob.get('/messages', {
      anchor: 'newest',
      num_before: 10,
      narrow: [{ operator: 'search', operand: 'rocket' }],
    });
    expect(r.body.messages).toHaveLength(1);
    expect(r.body.messages[0].match_content).toBe(
      '<p>the <strong><span class="highlight">rocket</span></strong> launched</p>',
    );
    expect(r.body.messages[0].match_subject).toBe('release');
  });

  it('covers public history for non-subscribers (read, historical) but only the own history without a stream term', async () => {
    const id = await w.alice.send({ type: 'stream', to: 'design', topic: 't', content: 'design talk' });
    const viaStream = await w.carol.get('/messages', {
      anchor: 'newest',
      num_before: 5,
      narrow: [{ operator: 'channel', operand: 'design' }],
    });
    expect(viaStream.body.messages.map((m: { id: number; flags: string[] }) => [m.id, m.flags])).toEqual([
      [id, ['read', 'historical']],
    ]);
    const own = await w.carol.get('/messages', { anchor: 'newest', num_before: 5 });
    expect(own.body.messages.map((m: { id: number }) => m.id)).not.toContain(id);
    const all = await w.carol.get('/messages', {
      anchor: 'newest',
      num_before: 5,
      narrow: [['channels', 'public']],
    });
    expect(all.body.messages.map((m: { id: number }) => m.id)).toContain(id);
  });

  it('applies protected and shared history on private streams', async () => {
    const before = await w.alice.send({ type: 'stream', to: 'secret', topic: 't', content: 'old secret' });
    const sharedBefore = await w.alice.send({
      type: 'stream',
      to: 'shared',
      topic: 't',
      content: 'old shared',
    });
    w.realm.subscribe(w.ids.carol, 'secret');
    w.realm.subscribe(w.ids.carol, 'shared');
    const after = await w.alice.send({ type: 'stream', to: 'secret', topic: 't', content: 'new secret' });
    const ids = async (stream: string) =>
      (
        await w.carol.get('/messages', {
          anchor: 'newest',
          num_before: 5,
          narrow: [{ operator: 'channel', operand: stream }],
        })
      ).body.messages.map((m: { id: number }) => m.id);
    expect(await ids('secret')).toEqual([after]);
    expect(await ids('shared')).toEqual([sharedBefore]);
    expect((await w.carol.get(`/messages/${before}`)).body.msg).toBe('Invalid message(s)');
    expect((await w.bob.get(`/messages/${sharedBefore}`)).status).toBe(400);
  });

  it('feeds has:link, has:attachment, has:image and has:reaction', async () => {
    const { url } = w.realm.upload(w.ids.alice, 'chart.png', new Uint8Array([1, 2, 3]), 'image/png');
    const pdf = w.realm.upload(w.ids.alice, 'notes.pdf', new Uint8Array([4, 5]), 'application/pdf');
    const link = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 'h',
      content: 'see https://example.org',
    });
    const file = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 'h',
      content: `[notes.pdf](${pdf.url})`,
    });
    const image = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 'h',
      content: `[chart](${url})`,
    });
    const plain = await w.alice.send({ type: 'stream', to: 'general', topic: 'h', content: 'plain' });
    await w.bob.post(`/messages/${plain}/reactions`, { emoji_name: 'octopus' });
    const has = async (what: string) =>
      (
        await w.bob.get('/messages', {
          anchor: 'newest',
          num_before: 9,
          narrow: [...inGeneral, ['has', what]],
        })
      ).body.messages.map((m: { id: number }) => m.id);
    expect(await has('link')).toEqual([link, file, image]);
    expect(await has('attachment')).toEqual([file, image]);
    expect(await has('image')).toEqual([image]);
    expect(await has('reaction')).toEqual([plain]);
  });
});

describe('sending', () => {
  it('returns increasing ids and accepts stream by name, JSON name, id, one-element list, and type channel', async () => {
    const forms: Record<string, unknown>[] = [
      { type: 'stream', to: 'general' },
      { type: 'stream', to: '"general"' },
      { type: 'channel', to: w.ids.general },
      { type: 'stream', to: `[${w.ids.general}]` },
    ];
    let last = 0;
    for (const form of forms) {
      const id = await w.alice.send({ ...form, topic: 't', content: 'x' });
      expect(id).toBeGreaterThan(last);
      last = id;
      expect(w.realm.message(id)?.streamId).toBe(w.ids.general);
    }
  });

  it('answers unknown streams with STREAM_DOES_NOT_EXIST carrying stream or stream_id', async () => {
    const byName = await w.alice.post('/messages', {
      type: 'stream',
      to: 'nowhere',
      topic: 't',
      content: 'x',
    });
    expect(byName.body).toEqual({
      result: 'error',
      code: 'STREAM_DOES_NOT_EXIST',
      msg: "Channel 'nowhere' does not exist",
      stream: 'nowhere',
    });
    const byId = await w.alice.post('/messages', { type: 'stream', to: 999, topic: 't', content: 'x' });
    expect(byId.body).toMatchObject({ code: 'STREAM_DOES_NOT_EXIST', stream_id: 999 });
  });

  it('refuses bad types, missing topics, empty and NUL content, and private streams', async () => {
    const err = async (params: Record<string, unknown>) => (await w.bob.post('/messages', params)).body.msg;
    expect(await err({ type: 'bogus', to: 'general', topic: 't', content: 'x' })).toBe('Invalid type');
    expect(await err({ type: 'stream', to: 'general', content: 'x' })).toBe('Missing topic');
    expect(await err({ type: 'stream', to: 'general', topic: 't', content: '\n\n   ' })).toBe(
      'Message must not be empty',
    );
    expect(await err({ type: 'stream', to: 'general', topic: 't', content: 'a\u0000b' })).toBe(
      'Message must not contain null bytes',
    );
    expect(await err({ type: 'stream', to: 'secret', topic: 't', content: 'x' })).toBe(
      "Not authorized to send to channel 'secret'",
    );
  });

  it('truncates long content and topics the way Zulip does', async () => {
    const id = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: `  ${'t'.repeat(70)}  `,
      content: 'x'.repeat(10050),
    });
    const msg = w.realm.message(id);
    expect(msg?.content).toHaveLength(10000);
    expect(msg?.content.endsWith('\n[message truncated]')).toBe(true);
    expect(msg?.topic).toBe(`${'t'.repeat(57)}...`);
    const trimmed = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '\n\n  hi  \n  ',
    });
    expect(w.realm.message(trimmed)?.content).toBe('  hi');
  });

  it('stores "(no topic)" as the empty topic and shows it as "general chat" unless allowed', async () => {
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: '(no topic)', content: 'x' });
    expect(w.realm.message(id)?.topic).toBe('');
    expect((await w.bob.get(`/messages/${id}`)).body.message.subject).toBe('general chat');
    expect((await w.bob.get(`/messages/${id}`, { allow_empty_topic_name: true })).body.message.subject).toBe(
      '',
    );
  });

  it('resolves DM recipients by id or email and refuses unknown or mixed ones', async () => {
    const byIds = await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'a' });
    const byEmails = await w.alice.send({ type: 'private', to: 'bob@acme.example', content: 'b' });
    const byJsonEmails = await w.alice.send({ type: 'direct', to: ['bob@acme.example'], content: 'c' });
    const recipient = w.realm.message(byIds)?.recipientId;
    expect(w.realm.message(byEmails)?.recipientId).toBe(recipient);
    expect(w.realm.message(byJsonEmails)?.recipientId).toBe(recipient);
    const err = async (to: unknown) =>
      (await w.alice.post('/messages', { type: 'direct', to, content: 'x' })).body.msg;
    expect(await err('nobody@acme.example')).toBe("Invalid email 'nobody@acme.example'");
    expect(await err([999])).toBe('Invalid user ID 999');
    expect(await err([w.ids.bob, 'carol@acme.example'])).toBe(
      'Recipient lists may contain emails or user IDs, but not both.',
    );
  });

  it('gives a 1:1 conversation the same recipient_id in both directions, sender in display_recipient', async () => {
    const there = await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'hi' });
    const back = await w.bob.send({ type: 'direct', to: [w.ids.alice], content: 'hey' });
    const r = await w.bob.get('/messages', { message_ids: [there, back] });
    const [m1, m2] = r.body.messages;
    expect(m1.recipient_id).toBe(m2.recipient_id);
    expect(m1).toMatchObject({ type: 'private', subject: '' });
    expect(m1).not.toHaveProperty('stream_id');
    expect(m1.display_recipient.map((u: { id: number }) => u.id)).toEqual([w.ids.alice, w.ids.bob]);
    expect(m1.display_recipient[0]).toEqual({
      id: w.ids.alice,
      email: 'alice@acme.example',
      full_name: 'Alice Ant',
      is_mirror_dummy: false,
    });
  });
});

describe('flags at send time', () => {
  it("starts an API client's own message unread, a web UI's or read_by_sender's read", async () => {
    const api = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'from a script' });
    expect(w.realm.flags(w.ids.alice, api)).toEqual([]);
    w.alice.userAgent = 'ZulipElectron/5.11 (Linux)';
    const ui = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'typed' });
    expect(w.realm.flags(w.ids.alice, ui)).toEqual(['read']);
    w.alice.userAgent = 'ZulipPython/0.9.1';
    const asked = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: 'x',
      read_by_sender: true,
    });
    expect(w.realm.flags(w.ids.alice, asked)).toEqual(['read']);
    expect(w.realm.message(api)?.client).toBe('ZulipPython');
  });

  it('sets mentioned, wildcard, silent and quoted mentions the way Zulip does', async () => {
    const direct = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: 'hey @**Bob Bee**',
    });
    expect(w.realm.flags(w.ids.bob, direct)).toContain('mentioned');
    expect(w.realm.flags(w.ids.carol, direct)).toEqual([]);
    const byId = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: `@**Carol Cat|${w.ids.carol}**`,
    });
    expect(w.realm.flags(w.ids.carol, byId)).toEqual(['mentioned']);
    const wildcard = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '@**all** standup',
    });
    expect(w.realm.flags(w.ids.carol, wildcard)).toEqual(['stream_wildcard_mentioned', 'wildcard_mentioned']);
    const silent = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '@_**Bob Bee** fyi',
    });
    expect(w.realm.flags(w.ids.bob, silent)).toEqual([]);
    const quoted = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '> @**Bob Bee** said',
    });
    expect(w.realm.flags(w.ids.bob, quoted)).toEqual([]);
    const coded = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '`@**Bob Bee**`',
    });
    expect(w.realm.flags(w.ids.bob, coded)).toEqual([]);
  });

  it('sets topic_wildcard_mentioned only for topic participants, and has_alert_word', async () => {
    await w.bob.send({ type: 'stream', to: 'general', topic: 'standup', content: 'here' });
    const id = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 'standup',
      content: '@**topic** ping',
    });
    expect(w.realm.flags(w.ids.bob, id)).toEqual(['topic_wildcard_mentioned', 'wildcard_mentioned']);
    expect(w.realm.flags(w.ids.carol, id)).toEqual([]);
    w.realm.setAlertWords(w.ids.carol, ['Deploy']);
    const alert = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: 'deploy at noon',
    });
    const miss = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'redeployment' });
    expect(w.realm.flags(w.ids.carol, alert)).toEqual(['has_alert_word']);
    expect(w.realm.flags(w.ids.carol, miss)).toEqual([]);
  });
});

describe('rendering', () => {
  async function render(content: string): Promise<string> {
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 'render', content });
    return (await w.bob.get(`/messages/${id}`)).body.message.content;
  }

  it('renders Zulip-flavoured markdown', async () => {
    expect(await render('a *b* **c** ~~d~~ `e<f>`')).toBe(
      '<p>a <em>b</em> <strong>c</strong> <del>d</del> <code>e&lt;f&gt;</code></p>',
    );
    expect(await render('line one\nline two')).toBe('<p>line one<br>\nline two</p>');
    expect(await render('```python\nprint("<hi>")\n```')).toBe(
      '<div class="codehilite" data-code-language="python"><pre><span></span><code>print("&lt;hi&gt;")\n</code></pre></div>',
    );
    expect(await render('> quoted\n\nafter')).toBe(
      '<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>after</p>',
    );
    expect(await render('* one\n* two')).toBe('<ul>\n<li>one</li>\n<li>two</li>\n</ul>');
    expect(await render('3. three\n4. four')).toBe('<ol start="3">\n<li>three</li>\n<li>four</li>\n</ol>');
    expect(await render('[site](https://example.org/x) and https://example.org/y.')).toBe(
      '<p><a href="https://example.org/x">site</a> and <a href="https://example.org/y">https://example.org/y</a>.</p>',
    );
    expect(await render(':tada: :nosuch:')).toBe(
      '<p><span aria-label="tada" class="emoji emoji-1f389" role="img" title="tada">:tada:</span> :nosuch:</p>',
    );
  });

  it('renders mentions, silent mentions, wildcards and stream links', async () => {
    expect(await render('@**Bob Bee** @_**Carol Cat** @**all** @**nobody**')).toBe(
      `<p><span class="user-mention" data-user-id="${w.ids.bob}">@Bob Bee</span> ` +
        `<span class="user-mention silent" data-user-id="${w.ids.carol}">Carol Cat</span> ` +
        '<span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span> @**nobody**</p>',
    );
    expect(await render('#**general**')).toBe(
      `<p><a class="stream" data-stream-id="${w.ids.general}" href="/#narrow/channel/${w.ids.general}-general">#general</a></p>`,
    );
  });

  it('previews uploaded images after their paragraph', async () => {
    const { url } = w.realm.upload(w.ids.alice, 'pic.png', new Uint8Array([1]), 'image/png');
    expect(await render(`look [pic.png](${url})`)).toBe(
      `<p>look <a href="${url}">pic.png</a></p>\n<div class="message_inline_image"><a href="${url}" title="pic.png"><img src="${url}"></a></div>`,
    );
  });

  it('previews rendering without sending on POST /messages/render', async () => {
    const r = await w.alice.post('/messages/render', { content: 'a **b**' });
    expect(r.body).toEqual({ result: 'success', msg: '', rendered: '<p>a <strong>b</strong></p>' });
    expect(w.realm.messageCount()).toBe(0);
  });

  it('returns raw markdown with apply_markdown=false and on GET /messages/{id} as raw_content', async () => {
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'shipped **v2**' });
    const raw = await w.bob.get('/messages', { anchor: id, apply_markdown: false });
    expect(raw.body.messages[0]).toMatchObject({
      content: 'shipped **v2**',
      content_type: 'text/x-markdown',
    });
    const one = await w.bob.get(`/messages/${id}`);
    expect(one.body).toMatchObject({
      raw_content: 'shipped **v2**',
      message: { content: '<p>shipped <strong>v2</strong></p>', content_type: 'text/html', flags: [] },
    });
  });
});
