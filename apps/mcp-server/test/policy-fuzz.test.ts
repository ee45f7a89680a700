// Issue 10's adversarial suite: many generated cases against every tool (names and look-alikes,
// ids of closed streams and messages, /user_uploads/ paths of closed files, forged cursors,
// oversized and deeply nested inputs), asserting on the wire (the simulator's request log) that no
// non-GET request acted in a stream or DM outside the write policy and no read reached into a
// closed stream or file, and in every rendering that no closed content (unique markers) reached
// the model. A thrown internal error (-32603) counts as a failure: bad input is a tool error.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProtocolError } from '@modelcontextprotocol/client';
import type { SimRequestRecord } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Connected, connect, envFor } from './adversarial/harness.js';
import { CLOSED_KEYS, NAMES, type PolicyRealm, startPolicyRealm } from './adversarial/policy-realm.js';
import { closedReads, MessagePlaces, writesOutside } from './adversarial/wire.js';

let p: PolicyRealm;
let dir: string;
let conn: Connected;
let places: MessagePlaces;
const records: SimRequestRecord[] = [];
const violations = new Map<string, string[]>();
const counts = new Map<string, number>();
const thrown = new Map<string, number>();

type Args = Record<string, unknown>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zmcp-fuzz-'));
  p = await startPolicyRealm();
  p.sim.onRequest((r) => records.push(r));
  places = new MessagePlaces(p.sim);
  conn = await connect({
    ...envFor(p.sim, p.botId, dir),
    ZULIP_TOOLSETS: 'all',
    ZULIP_PRIVATE_STREAMS: 'café,strasse',
    ZULIP_WRITE_STREAMS: 'general,café,naïve,strasse',
  });
}, 60_000);

afterAll(async () => {
  await conn?.close();
  // Clean-up requests sent while closing (indicators, typing) count too.
  checkWire('closing', records.length);
  await p?.sim.close();
  await rm(dir, { recursive: true, force: true });
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const found = [...violations.values()].reduce((a, b) => a + b.length, 0);
  process.stderr.write(
    `policy fuzz: ${total} cases over ${counts.size} tools, ${records.length} requests checked on the wire, ${found} violations, ${[...thrown.values()].reduce((a, b) => a + b, 0)} protocol errors\n`,
  );
});

function allowedWrites() {
  return {
    streams: new Set([p.streamIds.general, p.streamIds.cafe, p.streamIds.naive, p.streamIds.strasse]),
    dms: false,
  };
}

/** What is closed and may not be shown: content markers and closed stream names (unless the arguments hold them). */
function secretsIn(rendered: string, args: Args): string[] {
  // A name the caller gave (in any case, as Zulip compares names) may be echoed; nothing else.
  const given = JSON.stringify(args).toLowerCase();
  const secrets = [...p.markers, ...CLOSED_KEYS.map((k) => NAMES[k])];
  return secrets.filter(
    (s) =>
      rendered.includes(s) &&
      !given.includes(s.toLowerCase()) &&
      !given.includes(JSON.stringify(s).slice(1, -1).toLowerCase()),
  );
}

let checked = 0;
function checkWire(tool: string, upTo: number): void {
  const fresh = records.slice(checked, upTo);
  checked = upTo;
  const bad = [
    ...writesOutside(p.sim, places, fresh, allowedWrites()),
    ...closedReads(p.sim, fresh, new Set(CLOSED_KEYS.map((k) => p.streamIds[k])), p.closedPaths),
  ];
  if (bad.length > 0) violations.set(tool, [...(violations.get(tool) ?? []), ...bad]);
}

async function fuzz(
  tool: string,
  args: Args,
): Promise<{ text: string; structured?: Record<string, unknown> }> {
  places.refresh();
  counts.set(tool, (counts.get(tool) ?? 0) + 1);
  let text = '';
  let structured: Record<string, unknown> | undefined;
  try {
    const r = await conn.client.callTool({ name: tool, arguments: args });
    text = ((r.content ?? []) as { type: string; text?: string }[])
      .filter((b) => b.type === 'text')
      .map((b) => b.text ?? '')
      .join('\n');
    structured = r.structuredContent as Record<string, unknown> | undefined;
    const secrets = secretsIn(`${text}\n${JSON.stringify(structured ?? {})}`, args);
    if (secrets.length > 0)
      violations.set(tool, [
        ...(violations.get(tool) ?? []),
        `${tool}(${JSON.stringify(args).slice(0, 140)}) showed ${secrets.join(', ')}: ${JSON.stringify(text.slice(0, 160))}`,
      ]);
  } catch (err) {
    const code = err instanceof ProtocolError ? err.code : 'thrown';
    thrown.set(tool, (thrown.get(tool) ?? 0) + 1);
    if (code === -32603 || code === 'thrown')
      violations.set(tool, [
        ...(violations.get(tool) ?? []),
        `${tool}(${JSON.stringify(args).slice(0, 140)}) failed with a protocol error ${String(code)}: ${String((err as Error).message).slice(0, 160)}`,
      ]);
  }
  places.refresh();
  checkWire(tool, records.length);
  return { text, ...(structured === undefined ? {} : { structured }) };
}

// ------------------------------------------------------------------ generated inputs

/** Every spelling of a closed (or write-closed) stream an attacker might try. */
function streamRefs(): (string | number)[] {
  const out: (string | number)[] = [];
  for (const key of [...CLOSED_KEYS, 'naiveNfd', 'offlimits', 'nosub'] as const) {
    const name: string = NAMES[key];
    const id = p.streamIds[key];
    out.push(
      name,
      id,
      String(id),
      `#${name}`,
      `#**${name}**`,
      name.toUpperCase(),
      ` ${name} `,
      JSON.stringify(name),
      name.normalize('NFC'),
      name.normalize('NFKC'),
      `${name}\u200b`,
      name.replace(/e/g, 'E'),
    );
  }
  return [...new Set(out)];
}

function streamNames(): string[] {
  return streamRefs().filter((r): r is string => typeof r === 'string');
}

function closedIds(): number[] {
  return [...p.closedMessageIds, p.sim.realm.maxMessageId() + 1000, 2_147_483_647];
}

function pathForms(): string[] {
  const out: string[] = [];
  for (const path of p.closedPaths) {
    const rest = path.slice('/user_uploads/'.length);
    out.push(
      path,
      `${p.sim.url}${path}`,
      `${p.sim.url.toUpperCase()}${path}`,
      `${path}?download=1`,
      `${path}#x`,
      `/user_uploads//${rest}`,
      `/user_uploads/${rest.split('/')[0]}/../${rest}`,
      `/user_uploads/${rest.replaceAll('/', '%2F')}`,
      `/api/v1${path}`,
      `user_uploads/${rest}`,
      `${p.sim.url}/user_uploads/temporary/forged/${rest.split('/').at(-1)}`,
    );
  }
  return out;
}

const USERS: (string | number)[] = [
  'e',
  'Lee',
  'Ann',
  'fox',
  'olivia',
  '@**Ann**',
  'ann@policy.example',
  'Ann Lee',
];

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

const HUGE = 'x'.repeat(150_000);

/** Oversized and nested variants of a tool's every argument slot. */
function hostileShapes(base: Args): Args[] {
  const out: Args[] = [];
  for (const key of Object.keys(base)) {
    out.push(
      { ...base, [key]: HUGE },
      { ...base, [key]: nested(3000) },
      { ...base, [key]: new Array(5000).fill(1) },
    );
  }
  out.push({ ...base, extra: nested(3000) });
  return out;
}

// ------------------------------------------------------------------ the cases of each tool

async function ownMessage(): Promise<number> {
  const out = await fuzz('send_message', { stream: NAMES.general, topic: 'fuzz own', content: 'mine' });
  return out.structured?.message_id as number;
}

const plan: Record<string, () => Promise<void>> = {
  async fetch_history() {
    for (const stream of streamRefs()) {
      await fuzz('fetch_history', { stream, limit: 5 });
      await fuzz('fetch_history', { stream, topic: 'plans' });
    }
    for (const u of [...USERS, p.annId, p.eliId]) await fuzz('fetch_history', { dm: [u] });
    const first = await fuzz('fetch_history', { stream: NAMES.general, limit: 1 });
    const cursor = first.structured?.next_cursor;
    if (typeof cursor === 'string') {
      for (const stream of streamRefs().slice(0, 12)) await fuzz('fetch_history', { stream, cursor });
      const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
      const forged = Buffer.from(
        decoded.replace(/"id":\d+/, `"id":${p.sim.realm.maxMessageId() + 1}`),
      ).toString('base64url');
      await fuzz('fetch_history', { stream: p.streamIds.secret, cursor: forged });
    }
    for (const shape of hostileShapes({ stream: NAMES.general, topic: 'plans' }))
      await fuzz('fetch_history', shape);
  },
  async fetch_around() {
    for (const id of closedIds()) await fuzz('fetch_around', { message_id: id, before: 5, after: 5 });
    for (const shape of hostileShapes({ message_id: 1 })) await fuzz('fetch_around', shape);
  },
  async get_channel_history() {
    for (const stream of streamRefs()) await fuzz('get_channel_history', { stream, when: 'last 7 days' });
    for (const shape of hostileShapes({ stream: NAMES.general, when: 'today' }))
      await fuzz('get_channel_history', shape);
  },
  async search_messages() {
    for (const stream of streamRefs()) await fuzz('search_messages', { query: 'body', stream });
    for (const query of ['closed', 'body', 'dm', 'file', 'QXCLOSED', 'secret', 'plans'])
      await fuzz('search_messages', { query, limit: 100 });
    for (const sender of [...USERS, p.annId, p.ownerId])
      await fuzz('search_messages', { query: 'body', sender });
    await fuzz('search_messages', { query: 'f', has: ['attachment', 'link'] });
    await fuzz('search_messages', { query: 'body', is: ['mentioned', 'unread'] });
    for (const shape of hostileShapes({ query: 'body' })) await fuzz('search_messages', shape);
  },
  async get_message() {
    for (const id of closedIds()) await fuzz('get_message', { message_id: id });
    for (const shape of hostileShapes({ message_id: 1 })) await fuzz('get_message', shape);
  },
  async get_message_link() {
    for (const id of closedIds()) {
      await fuzz('get_message_link', { message_id: id });
      await fuzz('get_message_link', { message_id: id, follow_moves: true });
    }
  },
  async list_streams() {
    for (const name_contains of ['caf', 'secret', 'stra', 'plans', 'QX', '\u200b', '\u2800'])
      await fuzz('list_streams', { name_contains });
    await fuzz('list_streams', {});
    await fuzz('list_streams', { subscribed_only: true, limit: 200 });
  },
  async get_stream_topics() {
    for (const stream of streamRefs()) await fuzz('get_stream_topics', { stream });
  },
  async list_stream_members() {
    for (const stream of streamRefs()) await fuzz('list_stream_members', { stream });
  },
  async list_users() {
    await fuzz('list_users', { include_bots: true, include_deactivated: true });
    for (const shape of hostileShapes({ limit: 5 })) await fuzz('list_users', shape);
  },
  async find_user() {
    for (const query of [...USERS, p.annId, 99_999]) await fuzz('find_user', { query });
  },
  async get_user_profile() {
    for (const user of [...USERS, p.annId, p.botId]) await fuzz('get_user_profile', { user });
  },
  async list_emojis() {
    await fuzz('list_emojis', {});
    for (const shape of hostileShapes({ name_contains: 'x' })) await fuzz('list_emojis', shape);
  },
  async fetch_attachment() {
    for (const path of pathForms()) await fuzz('fetch_attachment', { path });
    for (const shape of hostileShapes({ path: p.files.open })) await fuzz('fetch_attachment', shape);
  },
  async list_attachments() {
    await fuzz('list_attachments', { limit: 200 });
    for (const shape of hostileShapes({ limit: 5 })) await fuzz('list_attachments', shape);
  },
  async remind_me() {
    // Closed messages, and readable ones in streams the bot may not write to.
    const targets = [
      ...closedIds(),
      ...(p.openMessageIds.naiveNfd ?? []),
      ...(p.openMessageIds.offlimits ?? []),
    ];
    for (const id of targets) await fuzz('remind_me', { message_id: id, when: 'in 2 hours' });
    for (const shape of hostileShapes({ message_id: 1, when: 'in 1 hour', note: 'x' }))
      await fuzz('remind_me', shape);
  },
  async list_reminders() {
    await fuzz('list_reminders', { limit: 200 });
  },
  async cancel_reminder() {
    for (const id of [1, 2, 3, 2_147_483_647]) await fuzz('cancel_reminder', { reminder_id: id });
    for (const shape of hostileShapes({ reminder_id: 1 })) await fuzz('cancel_reminder', shape);
  },
  async send_message() {
    for (const stream of streamRefs())
      await fuzz('send_message', { stream, topic: 'fuzz', content: 'must not arrive' });
    for (const file of p.closedPaths)
      await fuzz('send_message', {
        stream: NAMES.general,
        topic: 'fuzz',
        content: 'x',
        attachments: [{ file }],
      });
    for (const shape of hostileShapes({ stream: NAMES.general, topic: 'fuzz', content: 'x' }))
      await fuzz('send_message', shape);
  },
  async send_dm() {
    for (const to of [...USERS, p.annId, p.eliId, p.ownerId])
      await fuzz('send_dm', { to: [to], content: 'no DMs' });
    await fuzz('send_dm', { to: [p.annId, p.eliId], content: 'no group DMs' });
    for (const shape of hostileShapes({ to: [p.annId], content: 'x' })) await fuzz('send_dm', shape);
  },
  async upload_file() {
    await fuzz('upload_file', {
      attachment: { data: Buffer.from('fine').toString('base64'), name: 'fine.txt' },
    });
    for (const file of p.closedPaths) await fuzz('upload_file', { attachment: { file } });
    for (const shape of hostileShapes({ attachment: { data: 'eA==', name: 'x.txt' } }))
      await fuzz('upload_file', shape);
  },
  async edit_message() {
    for (const id of closedIds()) await fuzz('edit_message', { message_id: id, content: 'changed' });
    const own = await ownMessage();
    for (const stream of streamRefs()) {
      await fuzz('edit_message', { message_id: own, stream });
      await fuzz('edit_message', { message_id: own, stream, topic: 'moved', propagate_mode: 'change_all' });
    }
    for (const shape of hostileShapes({ message_id: own, content: 'x' })) await fuzz('edit_message', shape);
  },
  async delete_message() {
    for (const id of closedIds()) await fuzz('delete_message', { message_id: id });
  },
  async add_reaction() {
    const targets = [
      ...closedIds(),
      ...(p.openMessageIds.naiveNfd ?? []),
      ...(p.openMessageIds.offlimits ?? []),
    ];
    for (const id of targets) await fuzz('add_reaction', { message_id: id, emoji: 'tada' });
    for (const shape of hostileShapes({ message_id: 1, emoji: 'tada' })) await fuzz('add_reaction', shape);
  },
  async remove_reaction() {
    for (const id of closedIds()) await fuzz('remove_reaction', { message_id: id, emoji: 'tada' });
  },
  async resolve_topic() {
    for (const stream of streamRefs()) {
      await fuzz('resolve_topic', { stream, topic: 'plans' });
      await fuzz('resolve_topic', { stream, topic: 'plans', unresolve: true });
    }
  },
  async mark_read() {
    await fuzz('mark_read', { message_ids: closedIds().slice(0, 100) });
    for (const stream of streamRefs()) await fuzz('mark_read', { stream, topic: 'plans' });
  },
  async subscribe() {
    for (const name of streamNames()) await fuzz('subscribe', { streams: [name] });
    await fuzz('subscribe', { streams: ['brand new stream'] });
  },
  async unsubscribe() {
    for (const name of streamNames()) await fuzz('unsubscribe', { streams: [name] });
  },
  async start_monitoring() {
    for (const name of streamNames())
      await fuzz('start_monitoring', { streams: [name], since_message_id: 0 });
  },
  async get_monitored_channels() {
    await fuzz('get_monitored_channels', {});
  },
  async get_unread_messages() {
    await fuzz('get_unread_messages', { limit: 200 });
    for (const name of streamNames()) await fuzz('get_unread_messages', { streams: [name], limit: 200 });
  },
  async stop_monitoring() {
    for (const name of streamNames()) await fuzz('stop_monitoring', { streams: [name] });
  },
  async set_context() {
    for (const stream of streamRefs()) {
      await fuzz('set_context', { stream, topic: 'plans' });
      await fuzz('reply', { content: 'must not arrive' });
    }
    for (const id of closedIds()) {
      await fuzz('set_context', { stream: NAMES.general, topic: 'plans', trigger_message_id: id });
      await fuzz('set_context', { trigger_message_id: id });
    }
  },
  async reply() {
    await fuzz('reply', { content: 'x', attachments: p.closedPaths.map((file) => ({ file })) });
    for (const shape of hostileShapes({ content: 'x' })) await fuzz('reply', shape);
  },
  async listen() {
    // Bound to a stream the bot may read but not write to: listen must not write there either.
    await fuzz('set_context', { stream: NAMES.offlimits, topic: 'plans' });
    await fuzz('listen', { timeout_seconds: 1 });
    for (const shape of hostileShapes({ timeout_seconds: 1 }).slice(0, 3)) await fuzz('listen', shape);
  },
  async end_session() {
    await fuzz('end_session', {});
    await fuzz('end_session', { extra: nested(3000) });
  },
};

describe('policy fuzz: nothing outside the policy is read or written (issue 10)', () => {
  it('has cases for every tool the server lists', async () => {
    const { tools } = await conn.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(plan).sort());
  });

  for (const [tool, cases] of Object.entries(plan)) {
    it(`${tool}: no write outside the policy, no read of closed content`, async () => {
      await cases();
      const found = violations.get(tool) ?? [];
      expect(found, `${found.length} violations:\n${found.slice(0, 12).join('\n')}`).toEqual([]);
    });
  }

  it('resources over closed streams show no closed content', async () => {
    for (const name of streamNames()) {
      const uri = `zulip://channel/${encodeURIComponent(name)}/unread`;
      counts.set('resources', (counts.get('resources') ?? 0) + 1);
      const text = await conn.client.readResource({ uri }).then(
        (r) => r.contents.map((c) => (c as { text?: string }).text ?? '').join('\n'),
        (err: unknown) => String((err as Error).message),
      );
      const secrets = secretsIn(text, { name });
      if (secrets.length > 0)
        violations.set('resources', [
          ...(violations.get('resources') ?? []),
          `${uri} showed ${secrets.join(', ')}`,
        ]);
    }
    checkWire('resources', records.length);
    const found = violations.get('resources') ?? [];
    expect(found, found.slice(0, 12).join('\n')).toEqual([]);
  });
});
