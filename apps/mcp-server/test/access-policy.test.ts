// Issue 10's "Access policy" items, one test (or a few) per item, through the SDK client and the
// simulator's request log: attachments behind the policy, allowlists that compare stream identity,
// a write allowlist that covers everything the bot does in a stream, event-queue messages under the
// same readability check as REST reads, closed streams that leak no metadata, and exact write
// targets. Written from the text, not from what the server does today.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Client } from '@modelcontextprotocol/client';
import type { SimRequestRecord, ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { type Connected, connect, envFor } from './adversarial/harness.js';
import { CLOSED_KEYS, NAMES, type PolicyRealm, startPolicyRealm } from './adversarial/policy-realm.js';
import { closedReads, MessagePlaces, writesOutside } from './adversarial/wire.js';
import { startSmallRealm } from './small-realm.js';

let p: PolicyRealm;
let dir: string;
let places: MessagePlaces;
const records: SimRequestRecord[] = [];
const open: Connected[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zmcp-policy-'));
  p = await startPolicyRealm();
  p.sim.onRequest((r) => records.push(r));
  places = new MessagePlaces(p.sim);
}, 60_000);

afterAll(async () => {
  for (const c of open.splice(0)) await c.close();
  await p?.sim.close();
  await rm(dir, { recursive: true, force: true });
});

/** The allowlists most tests run with: café and strasse opened, look-alikes closed. */
const READS = { ZULIP_PRIVATE_STREAMS: 'café,strasse' };

async function server(extra: Record<string, string> = {}): Promise<Connected> {
  const c = await connect({ ...envFor(p.sim, p.botId, dir), ZULIP_TOOLSETS: 'all', ...READS, ...extra });
  open.push(c);
  return c;
}

/** Closes a connection now (its clean-up requests reach the log before the test looks). */
async function done(c: Connected): Promise<void> {
  open.splice(open.indexOf(c), 1);
  await c.close();
}

interface Outcome {
  isError: boolean;
  code: string | undefined;
  text: string;
  /** Both renderings, for marker searches. */
  all: string;
  structured: Record<string, unknown> | undefined;
  /** The arguments of the call. */
  args: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Outcome> {
  places.refresh();
  const r = await client.callTool({ name, arguments: args });
  const text = ((r.content ?? []) as { type: string; text?: string }[])
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('\n');
  const structured = r.structuredContent as Record<string, unknown> | undefined;
  return {
    isError: r.isError === true,
    code: (r._meta as { 'zmcp/error'?: { code?: string } } | undefined)?.['zmcp/error']?.code,
    text,
    all: `${text}\n${structured === undefined ? '' : JSON.stringify(structured)}`,
    structured,
    args,
  };
}

/** Closed markers in `s`, leaving out any the caller passed in `args` (an echo is not a leak). */
function markersIn(s: string, args: Record<string, unknown> = {}): string[] {
  const given = JSON.stringify(args);
  return p.markers.filter((m) => s.includes(m) && !given.includes(m));
}

/** Requests logged since `from` (an index into the log). */
const since = (from: number) => records.slice(from);

function policy(keys: (keyof typeof NAMES)[], dms = false) {
  return { streams: new Set(keys.map((k) => p.streamIds[k])), dms };
}

/** Fails listing every item when `items` is not empty. */
function expectNone(items: readonly string[], what: string): void {
  expect(items, `${items.length} ${what}:\n${items.join('\n')}`).toEqual([]);
}

const closedStreamIds = () => new Set(CLOSED_KEYS.map((k) => p.streamIds[k]));

describe('attachments are behind the policy', () => {
  let c: Connected;
  beforeAll(async () => {
    c = await server();
  });

  for (const [what, key] of [
    ['posted only in a closed private stream', 'closed'],
    ['posted only in a DM (DM reads are closed)', 'dm'],
  ] as const) {
    it(`fetch_attachment refuses a file ${what}, even when the path is known`, async () => {
      const path = p.files[key];
      for (const form of [path, `${p.sim.url}${path}`]) {
        const from = records.length;
        const out = await call(c.client, 'fetch_attachment', { path: form });
        expect(out.isError, out.text).toBe(true);
        expectNone(markersIn(out.all), 'closed markers in what the model reads');
        expectNone(
          closedReads(p.sim, since(from), closedStreamIds(), p.closedPaths),
          'reads of closed streams or files',
        );
      }
    });
  }

  it('returns a file linked from a message the session may read', async () => {
    for (const key of ['open', 'allowlisted', 'both'] as const) {
      const out = await call(c.client, 'fetch_attachment', { path: p.files[key] });
      expect(out.isError, `${key}: ${out.text}`).toBe(false);
      expect(out.text).toContain(`open-file-${key}`);
    }
  });
});

/** The look-alikes of the allowlisted names, each a distinct stream Zulip keeps apart. */
const LOOKALIKES = [
  ['cafeNfd', 'café in NFD (cafe + U+0301)'],
  ['cafeWide', 'fullwidth ｃａｆé (café after NFKC)'],
  ['cafeZw', 'café with a zero-width space inside'],
  ['cafeBlank', 'café with a trailing braille blank'],
  ['strasseFold', 'straße (strasse after case folding)'],
] as const;

describe('allowlists compare stream identity, not normalized names', () => {
  const WRITES = { ZULIP_WRITE_STREAMS: 'general,café,naïve,strasse' };
  let c: Connected;
  beforeAll(async () => {
    c = await server(WRITES);
  });

  it('the allowlisted streams themselves are open to read, and café to write', async () => {
    for (const key of ['cafe', 'strasse'] as const) {
      const out = await call(c.client, 'fetch_history', { stream: NAMES[key] });
      expect(out.isError, out.text).toBe(false);
      expect(out.text).toContain(`open-${key}-0`);
    }
    const sent = await call(c.client, 'send_message', {
      stream: NAMES.cafe,
      topic: 'ok',
      content: 'allowed',
    });
    expect(sent.isError, sent.text).toBe(false);
  });

  for (const [key, label] of LOOKALIKES) {
    it(`${label}: nothing is read from it or written to it, by name or by id`, async () => {
      // A session of its own: nothing bound or monitored by another test carries over.
      const lc = await server(WRITES);
      const name = NAMES[key];
      const id = p.streamIds[key];
      const closedId = p.closedMessageIds.find((m) => p.sim.realm.message(m)?.streamId === id) as number;
      const from = records.length;
      const own = await call(lc.client, 'send_message', {
        stream: 'general',
        topic: 'mine',
        content: 'to move',
      });
      const ownId = own.structured?.message_id as number;
      const outcomes: [string, Outcome][] = [];
      for (const ref of [name, id]) {
        const calls: [string, Record<string, unknown>][] = [
          ['fetch_history', { stream: ref }],
          ['get_stream_topics', { stream: ref }],
          ['search_messages', { query: 'body', stream: ref }],
          ['get_channel_history', { stream: ref, when: 'last 7 days' }],
          ['list_stream_members', { stream: ref }],
          ['send_message', { stream: ref, topic: 'x', content: 'must not arrive' }],
          ['resolve_topic', { stream: ref, topic: p.sim.realm.message(closedId)?.topic as string }],
          ['edit_message', { message_id: ownId, stream: ref }],
          ['set_context', { stream: ref, topic: p.sim.realm.message(closedId)?.topic as string }],
          ['reply', { content: 'must not arrive' }],
          ['mark_read', { stream: ref }],
        ];
        for (const [tool, args] of calls)
          outcomes.push([`${tool}(${String(ref)})`, await call(lc.client, tool, args)]);
      }
      for (const [tool, args] of [
        ['start_monitoring', { streams: [name], since_message_id: 0 }],
        ['get_unread_messages', {}],
        ['get_message', { message_id: closedId }],
        ['fetch_around', { message_id: closedId }],
        ['add_reaction', { message_id: closedId, emoji: 'tada' }],
        ['subscribe', { streams: [name] }],
      ] as const) {
        outcomes.push([tool, await call(lc.client, tool, args)]);
      }
      const leaks = outcomes
        .filter(([, o]) => markersIn(o.all, o.args).length > 0)
        .map(([t, o]) => `${t}: ${o.text.slice(0, 200)}`);
      expect(leaks, leaks.join('\n')).toEqual([]);
      expectNone(
        writesOutside(p.sim, places, since(from), policy(['general', 'cafe', 'naive', 'strasse'])),
        'writes outside the policy',
      );
      expectNone(
        closedReads(p.sim, since(from), closedStreamIds(), p.closedPaths),
        'reads of closed streams or files',
      );
      await done(lc);
    });
  }

  it('a write list names streams by identity: naïve is writable, its NFD twin is not', async () => {
    const from = records.length;
    const ok = await call(c.client, 'send_message', { stream: NAMES.naive, topic: 't', content: 'fine' });
    expect(ok.isError, ok.text).toBe(false);
    const nfd = await call(c.client, 'send_message', {
      stream: NAMES.naiveNfd,
      topic: 't',
      content: 'refused',
    });
    expect(nfd.isError, nfd.text).toBe(true);
    const byId = await call(c.client, 'send_message', {
      stream: p.streamIds.naiveNfd,
      topic: 't',
      content: 'refused',
    });
    expect(byId.isError, byId.text).toBe(true);
    const target = (p.openMessageIds.naiveNfd ?? [])[0] as number;
    await call(c.client, 'add_reaction', { message_id: target, emoji: 'tada' });
    await call(c.client, 'resolve_topic', { stream: NAMES.naiveNfd, topic: 'plans' });
    expectNone(
      writesOutside(p.sim, places, since(from), policy(['general', 'cafe', 'naive', 'strasse'])),
      'writes outside the policy',
    );
  });

  it('an allowlist entry may be a stream id', async () => {
    const byId = await server({
      ZULIP_PRIVATE_STREAMS: String(p.streamIds.cafe),
      ZULIP_WRITE_STREAMS: String(p.streamIds.general),
    });
    const read = await call(byId.client, 'fetch_history', { stream: p.streamIds.cafe });
    expect(read.isError, read.text).toBe(false);
    expect(read.text).toContain('open-cafe-0');
    const sent = await call(byId.client, 'send_message', {
      stream: p.streamIds.general,
      topic: 'by id',
      content: 'ok',
    });
    expect(sent.isError, sent.text).toBe(false);
    const refused = await call(byId.client, 'send_message', {
      stream: NAMES.naive,
      topic: 'by id',
      content: 'no',
    });
    expect(refused.isError, refused.text).toBe(true);
    const closed = await call(byId.client, 'fetch_history', { stream: p.streamIds.cafeNfd });
    expect(closed.isError, closed.text).toBe(true);
  });
});

/** Runs `main` (stdio) against `sim` with `extra`; ends stdin once it serves. Resolves with the exit code and stderr. */
async function startUp(
  sim: ZulipSim,
  botId: number,
  extra: Record<string, string>,
): Promise<{ code: number; err: string }> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks: Buffer[] = [];
  stderr.on('data', (b: Buffer) => chunks.push(b));
  stdout.resume();
  const code = await main(
    [],
    { ...envFor(sim, botId, dir), ZMCP_LOG_LEVEL: 'error', ...extra },
    {
      stdin,
      stdout,
      stderr,
      onReady: () => stdin.end(),
    },
  );
  return { code, err: Buffer.concat(chunks).toString('utf8') };
}

describe('allowlist entries are resolved at start-up', () => {
  for (const [variable, value, entry] of [
    ['ZULIP_PRIVATE_STREAMS', 'café,nowhere', 'nowhere'],
    ['ZULIP_PRIVATE_STREAMS', 'cafe', 'cafe'],
    ['ZULIP_WRITE_STREAMS', 'general,nowhere', 'nowhere'],
    ['ZULIP_WRITE_STREAMS', 'general, naïve ,nai\u0308ve,no such stream', 'no such stream'],
  ] as const) {
    it(`${variable}=${value}: an entry that matches no stream stops start-up with exit code 2`, async () => {
      const { code, err } = await startUp(p.sim, p.botId, { [variable]: value });
      expect(code, err).toBe(2);
      expect(err).toContain(variable);
      expect(err).toContain(entry);
    });
  }

  it('an entry that matches more than one stream (a name that is another stream’s id) stops start-up', async () => {
    const small = await startSmallRealm('ambiguous');
    try {
      const general = small.sim.realm.stream('general')?.streamId as number;
      small.sim.realm.addStream({ name: String(general), subscribers: [small.annId, small.botId] });
      const { code, err } = await startUp(small.sim, small.botId, { ZULIP_WRITE_STREAMS: String(general) });
      expect(code, err).toBe(2);
      expect(err).toContain('ZULIP_WRITE_STREAMS');
      expect(err).toContain(String(general));
    } finally {
      await small.sim.close();
    }
  });

  it('allowlists of existing streams, by name or id, start normally', async () => {
    const { code, err } = await startUp(p.sim, p.botId, {
      ZULIP_PRIVATE_STREAMS: `café,${p.streamIds.strasse}`,
      ZULIP_WRITE_STREAMS: `general,${p.streamIds.cafe}`,
    });
    expect(code, err).toBe(0);
  });
});

describe('the write allowlist covers everything the bot does in a stream', () => {
  const WRITES = { ZULIP_WRITE_STREAMS: 'general,café' };

  it('listen shows no indicator and sends no typing notice in a stream outside ZULIP_WRITE_STREAMS', async () => {
    const c = await server(WRITES);
    const from = records.length;
    await call(c.client, 'set_context', { stream: NAMES.offlimits, topic: 'plans' });
    await call(c.client, 'listen', { timeout_seconds: 1 });
    p.sim.realm.sendMessage({
      senderId: p.annId,
      type: 'stream',
      stream: NAMES.offlimits,
      topic: 'plans',
      content: 'more?',
    });
    await call(c.client, 'listen', { timeout_seconds: 5 });
    await call(c.client, 'end_session', {});
    await done(c);
    expectNone(
      writesOutside(p.sim, places, since(from), policy(['general', 'cafe'])),
      'writes outside the policy',
    );
  });

  it('subscribe, start_monitoring and the session subscribe the bot to nothing outside ZULIP_WRITE_STREAMS', async () => {
    const c = await server(WRITES);
    const from = records.length;
    await call(c.client, 'subscribe', { streams: [NAMES.nosub] });
    await call(c.client, 'start_monitoring', { streams: [NAMES.nosub] });
    await call(c.client, 'set_context', { stream: NAMES.nosub, topic: 'plans' });
    await call(c.client, 'listen', { timeout_seconds: 1 });
    await call(c.client, 'end_session', {});
    await done(c);
    expectNone(
      writesOutside(p.sim, places, since(from), policy(['general', 'cafe'])),
      'writes outside the policy',
    );
    expect(p.sim.realm.stream(NAMES.nosub)?.subscribers).not.toContain(p.botId);
  });

  it('with a write list, DMs need ZULIP_WRITE_DMS=true, a documented setting the refusal names', async () => {
    const listOnly = await server(WRITES);
    let from = records.length;
    const refused = await call(listOnly.client, 'send_dm', { to: [p.annId], content: 'not allowed' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('ZULIP_WRITE_DMS');
    expect(refused.text).not.toContain('dmWrites');
    expectNone(
      writesOutside(p.sim, places, since(from), policy(['general', 'cafe'])),
      'writes outside the policy',
    );

    const withDms = await server({ ...WRITES, ZULIP_WRITE_DMS: 'true' });
    from = records.length;
    const sent = await call(withDms.client, 'send_dm', { to: [p.annId], content: 'allowed' });
    expect(sent.isError, sent.text).toBe(false);
    expect(since(from).some((r) => r.method === 'POST' && r.path === '/api/v1/messages')).toBe(true);

    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('`ZULIP_WRITE_DMS`');
  });
});

describe('messages from the event queue pass the same readability check as REST reads', () => {
  it('listen bound to the allowlisted café hands over nothing from its look-alikes or DMs', async () => {
    const c = await server();
    const bound = await call(c.client, 'set_context', { stream: p.streamIds.cafe, topic: 'live' });
    expect(bound.isError, bound.text).toBe(false);
    for (const key of CLOSED_KEYS) {
      p.sim.realm.sendMessage({
        senderId: p.annId,
        type: 'stream',
        stream: NAMES[key],
        topic: 'live',
        content: `live closed ${p.markers[0]} @**Helper Bot**`,
      });
    }
    p.sim.realm.sendMessage({
      senderId: p.annId,
      type: 'direct',
      to: [p.botId],
      content: `live dm ${p.markers[1]}`,
    });
    p.sim.realm.sendMessage({
      senderId: p.annId,
      type: 'stream',
      stream: NAMES.cafe,
      topic: 'live',
      content: 'wake up',
    });
    const got = await call(c.client, 'listen', { timeout_seconds: 10 });
    expect(got.isError, got.text).toBe(false);
    expect(got.text).toContain('wake up');
    expectNone(markersIn(got.all), 'closed markers in what the model reads');
    await call(c.client, 'end_session', {});
    await done(c);
  });

  it('the monitor and its resources show nothing from closed streams or DMs that arrives live', async () => {
    const c = await server();
    const channel = `zulip://channel/${encodeURIComponent(NAMES.cafe)}/unread`;
    const status = 'zulip://monitoring/status';
    const waiting: { uri: string; resolve: () => void }[] = [];
    c.client.setNotificationHandler('notifications/resources/updated', (n) => {
      for (const w of waiting.filter((x) => x.uri === n.params.uri)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    });
    const nextUpdate = (uri: string) => new Promise<void>((resolve) => waiting.push({ uri, resolve }));
    const readText = async (uri: string) =>
      (await c.client.readResource({ uri })).contents
        .map((x) => (x as { text?: string }).text ?? '')
        .join('\n');

    const started = await call(c.client, 'start_monitoring', { streams: [NAMES.cafe] });
    expect(started.isError, started.text).toBe(false);
    for (const uri of [channel, status, 'zulip://unread/summary']) await c.client.subscribeResource({ uri });
    // Live updates run once the watcher's event queue is registered; its status says so.
    for (;;) {
      const changed = nextUpdate(status);
      const live = JSON.parse(await readText(status)) as { live_updates?: { running?: boolean } };
      if (live.live_updates?.running === true) break;
      await changed;
    }
    const arrived = nextUpdate(channel);
    for (const key of CLOSED_KEYS) {
      p.sim.realm.sendMessage({
        senderId: p.annId,
        type: 'stream',
        stream: NAMES[key],
        topic: 'monitor',
        content: `monitor closed ${p.markers[2]}`,
      });
    }
    p.sim.realm.sendMessage({
      senderId: p.annId,
      type: 'direct',
      to: [p.botId],
      content: `monitor dm ${p.markers[3]}`,
    });
    p.sim.realm.sendMessage({
      senderId: p.annId,
      type: 'stream',
      stream: NAMES.cafe,
      topic: 'monitor',
      content: 'visible',
    });
    await arrived;
    const texts: string[] = [];
    for (const uri of ['zulip://unread/summary', status, channel]) texts.push(await readText(uri));
    const closedChannel = `zulip://channel/${encodeURIComponent(NAMES.cafeNfd)}/unread`;
    texts.push(await readText(closedChannel).catch((err: unknown) => String((err as Error).message)));
    const unread = await call(c.client, 'get_unread_messages', {});
    texts.push(unread.all);
    expect(unread.text).toContain('visible');
    expectNone(markersIn(texts.join('\n')), 'closed markers in what the model reads');
    await done(c);
  });
});

describe('closed streams leak no metadata', () => {
  let c: Connected;
  beforeAll(async () => {
    c = await server({ ZULIP_WRITE_STREAMS: 'general,café' });
  });

  it('a refusal by stream id does not reveal the stream’s name', async () => {
    const leaks: string[] = [];
    for (const key of CLOSED_KEYS) {
      const id = p.streamIds[key];
      const calls: [string, Record<string, unknown>][] = [
        ['fetch_history', { stream: id }],
        ['get_stream_topics', { stream: id }],
        ['list_stream_members', { stream: id }],
        ['get_channel_history', { stream: id, when: 'last 7 days' }],
        ['search_messages', { query: 'body', stream: id }],
        ['send_message', { stream: id, topic: 'x', content: 'no' }],
        ['set_context', { stream: id, topic: 'plans' }],
        ['resolve_topic', { stream: id, topic: 'plans' }],
        ['mark_read', { stream: id }],
      ];
      for (const [tool, args] of calls) {
        const out = await call(c.client, tool, args);
        if (!out.isError) leaks.push(`${tool}(${id}) succeeded: ${out.text.slice(0, 120)}`);
        if (out.all.includes(NAMES[key]))
          leaks.push(`${tool}(${id}) names ${JSON.stringify(NAMES[key])}: ${out.text.slice(0, 200)}`);
        if (markersIn(out.all).length > 0)
          leaks.push(`${tool}(${id}) shows closed content: ${out.text.slice(0, 200)}`);
      }
    }
    expect(leaks, leaks.join('\n')).toEqual([]);
  });

  it('a closed message and a missing one get the same answer, apart from the id', async () => {
    const missing = p.sim.realm.maxMessageId() + 1000;
    const closedStreamMessage = p.closedMessageIds.find(
      (m) => p.sim.realm.message(m)?.streamId === p.streamIds.secret,
    ) as number;
    const differ: string[] = [];
    for (const closed of [closedStreamMessage, p.dmId]) {
      for (const [tool, args] of [
        ['get_message', {}],
        ['fetch_around', {}],
        ['get_message_link', {}],
        ['add_reaction', { emoji: 'tada' }],
        ['remove_reaction', { emoji: 'tada' }],
        ['edit_message', { content: 'changed' }],
        ['delete_message', {}],
        ['mark_read', {}],
      ] as const) {
        const ids = (id: number) => (tool === 'mark_read' ? { message_ids: [id] } : { message_id: id });
        const a = await call(c.client, tool, { ...args, ...ids(closed) });
        const b = await call(c.client, tool, { ...args, ...ids(missing) });
        const norm = (o: Outcome, id: number) =>
          JSON.stringify({ isError: o.isError, code: o.code, all: o.all.replaceAll(String(id), '<ID>') });
        if (norm(a, closed) !== norm(b, missing))
          differ.push(
            `${tool}: closed ${closed} → ${a.code ?? 'ok'} ${JSON.stringify(a.text.slice(0, 140))}; missing → ${b.code ?? 'ok'} ${JSON.stringify(b.text.slice(0, 140))}`,
          );
        if (markersIn(a.all).length > 0) differ.push(`${tool}: closed ${closed} shows closed content`);
      }
    }
    expect(differ, differ.join('\n')).toEqual([]);
  });
});

describe('write targets are exact', () => {
  let c: Connected;
  beforeAll(async () => {
    c = await server();
  });

  for (const [partial, candidate] of [
    ['e', 'Eli Fox'],
    ['Lee', 'Ann Lee'],
    ['Ann', 'Ann Lee'],
    ['fox', 'Eli Fox'],
  ] as const) {
    it(`send_dm to ${JSON.stringify(partial)} sends nothing and answers with candidates (${candidate})`, async () => {
      const from = records.length;
      const out = await call(c.client, 'send_dm', { to: [partial], content: `for ${partial}` });
      expect(out.isError, out.text).toBe(true);
      expect(out.text).toContain(candidate);
      expect(since(from).filter((r) => r.method !== 'GET' && r.path === '/api/v1/messages')).toEqual([]);
    });
  }

  it('an id, an email or the exact full name is accepted', async () => {
    for (const to of [p.annId, 'ann@policy.example', 'Ann Lee']) {
      const from = records.length;
      const out = await call(c.client, 'send_dm', { to: [to], content: `to ${String(to)}` });
      expect(out.isError, `${String(to)}: ${out.text}`).toBe(false);
      const posted = since(from).filter((r) => r.method === 'POST' && r.path === '/api/v1/messages');
      expect(posted).toHaveLength(1);
      expect(String(posted[0]?.params.to)).toContain(String(p.annId));
    }
  });
});
