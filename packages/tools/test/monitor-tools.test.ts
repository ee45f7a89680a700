import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/page.js';
import { expectWithinBudget } from './call.js';
import { failed, type MonitorHarness, ok, startMonitorHarness } from './monitor-fixtures.js';

interface Started {
  streams: {
    stream_id: number;
    status: string;
    cursor: number | null;
    subscribed: boolean;
  }[];
  monitored: number;
}

interface Unread {
  ids: number[];
  unreadable: number;
  hidden: number;
  advanced: boolean;
  marked_read: number | null;
  next_cursor: string | null;
}

interface Listed {
  streams: {
    stream_id: number | null;
    cursor: number | null;
    unread: number;
    unread_more: boolean;
    newest_id: number | null;
  }[];
  total: number;
  live_updates: boolean;
  next_cursor: string | null;
}

describe('start_monitoring', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness({ policy: { privateStreams: ['secret', 'hidden'] } });
  });
  afterAll(async () => {
    await m.close();
  });

  it('starts each cursor at the stream’s newest message, so only later messages are unread', async () => {
    m.post('general', 'old news');
    const newest = m.post('general', 'still old');
    const { text, structured } = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['General'] }),
    );
    expect(structured).toEqual({
      streams: [
        { stream_id: m.h.realm.streams.general, status: 'started', cursor: newest, subscribed: true },
      ],
      monitored: 1,
    });
    expect(text.split('\n')).toEqual([
      'Monitoring 1 stream now (1 started or reset). Unread = messages newer than each cursor; read them with get_unread_messages.',
      `#general: started, cursor id=${newest}, bot subscribed`,
    ]);
    expect(await m.monitor.list()).toEqual([
      { name: 'general', streamId: m.h.realm.streams.general, lastReadId: newest },
    ]);
    const fresh = m.post('general', 'new since monitoring began');
    const unread = ok<Unread>(m, 'get_unread_messages', await m.call('get_unread_messages', {}));
    expect(unread.structured.ids).toEqual([fresh]);
  });

  it('keeps the cursor of a stream already monitored, and resets it with since_message_id', async () => {
    const before = (await m.monitor.list())[0]?.lastReadId;
    const again = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['general'] }),
    );
    expect(again.structured.streams[0]).toMatchObject({ status: 'already_monitored', cursor: before });
    const reset = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['general'], since_message_id: 1 }),
    );
    expect(reset.structured.streams[0]).toMatchObject({ status: 'restarted', cursor: 1 });
    expect((await m.monitor.list())[0]?.lastReadId).toBe(1);
    // Put it back where the other tests expect it.
    await m.call('start_monitoring', {
      streams: ['general'],
      since_message_id: m.h.sim.realm.maxMessageId(),
    });
  });

  it('subscribes the bot to a public stream it is not on, for live updates', async () => {
    const botId = m.h.realm.bot.userId;
    expect(m.h.sim.realm.stream('dev')?.subscribers).not.toContain(botId);
    const { structured, text } = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['dev'] }),
    );
    // dev holds no message yet: no cursor, so everything posted there will be unread.
    expect(structured.streams).toEqual([
      { stream_id: m.h.realm.streams.dev, status: 'started', cursor: null, subscribed: true },
    ]);
    expect(text.split('\n')[1]).toBe(
      '#dev: started, no cursor yet (every message is unread), bot subscribed',
    );
    expect(m.h.sim.realm.stream('dev')?.subscribers).toContain(botId);
    expect(structured.monitored).toBe(2);
  });

  it('monitors an allowlisted private stream the bot is in', async () => {
    const { structured } = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['secret'] }),
    );
    expect(structured.streams[0]).toMatchObject({ stream_id: m.h.realm.streams.secret, subscribed: true });
    await m.call('stop_monitoring', { streams: ['secret'] });
  });

  it('refuses a private stream the bot is not in, and an unknown one, starting nothing', async () => {
    const before = await m.monitor.list();
    const hidden = failed(
      await m.call('start_monitoring', { streams: ['general', 'hidden'] }),
      'TOOLS_NOT_FOUND',
    );
    expect(hidden.text).toContain('"hidden"');
    expect(hidden.text).toContain('invited');
    failed(await m.call('start_monitoring', { streams: ['nowhere'] }), 'TOOLS_NOT_FOUND');
    expect(await m.monitor.list()).toEqual(before);
  });

  it('refuses bad input by field', async () => {
    const empty = failed(await m.call('start_monitoring', { streams: [] }), 'TOOLS_INVALID_INPUT');
    expect(empty.text).toContain('streams');
    const since = failed(
      await m.call('start_monitoring', { streams: ['general'], since_message_id: -1 }),
      'TOOLS_INVALID_INPUT',
    );
    expect(since.text).toContain('since_message_id');
  });
});

describe('start_monitoring under the default policy', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness();
  });
  afterAll(async () => {
    await m.close();
  });

  it('refuses a private stream that is not allowlisted, starting nothing', async () => {
    const denied = failed(
      await m.call('start_monitoring', { streams: ['general', 'secret'] }),
      'CORE_ACCESS_DENIED',
    );
    expect(denied.text).toMatch(/stream id \d+ is not allowed/);
    expect(await m.monitor.list()).toEqual([]);
  });
});

describe('start_monitoring in read-only mode', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness({ policy: { readOnly: true } });
  });
  afterAll(async () => {
    await m.close();
  });

  it('monitors a stream the bot is not on without subscribing, and says live updates need it', async () => {
    const { structured, text } = ok<Started>(
      m,
      'start_monitoring',
      await m.call('start_monitoring', { streams: ['dev'] }),
    );
    expect(structured.streams[0]).toMatchObject({
      stream_id: m.h.realm.streams.dev,
      status: 'started',
      subscribed: false,
    });
    expect(text.split('\n')[1]).toMatch(/^#dev: started, .*bot not subscribed \(read-only mode/);
    expect(m.h.sim.realm.stream('dev')?.subscribers).not.toContain(m.h.realm.bot.userId);
    const id = m.post('dev', 'read by polling');
    const unread = ok<Unread>(m, 'get_unread_messages', await m.call('get_unread_messages', {}));
    expect(unread.structured.ids).toEqual([id]);
  });

  it('refuses mark_read_in_zulip clearly, reading and moving nothing; without it all works', async () => {
    const id = m.post('dev', 'waiting');
    const before = await m.monitor.list();
    const refused = failed(
      await m.call('get_unread_messages', { mark_read_in_zulip: true }),
      'CORE_READ_ONLY',
    );
    expect(refused.text).toContain('mark_read_in_zulip');
    expect(refused.text).toContain('without mark_read_in_zulip');
    expect(await m.monitor.list()).toEqual(before);
    const unread = ok<Unread>(m, 'get_unread_messages', await m.call('get_unread_messages', {}));
    expect(unread.structured.ids).toEqual([id]);
    expect(m.h.sim.realm.flags(m.h.realm.bot.userId, id)).not.toContain('read');
  });
});

describe('stop_monitoring', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness();
  });
  afterAll(async () => {
    await m.close();
  });

  it('stops streams, forgetting their cursors, and reports names that were not monitored', async () => {
    await m.call('start_monitoring', { streams: ['general', 'dev'] });
    const { structured, text } = ok(
      m,
      'stop_monitoring',
      await m.call('stop_monitoring', { streams: ['DEV', 'random'] }),
    );
    expect(structured).toEqual({ stopped: 1, not_monitored: 1, monitored: 1 });
    expect(text.split('\n')).toEqual([
      'Stopped monitoring 1 stream; 1 stream still monitored.',
      '#dev: stopped',
      '#random: was not monitored',
    ]);
    expect((await m.monitor.list()).map((s) => s.name)).toEqual(['general']);
    // The bot stays subscribed.
    expect(m.h.sim.realm.stream('dev')?.subscribers).toContain(m.h.realm.bot.userId);
  });

  it('refuses bad input by field', async () => {
    const r = failed(await m.call('stop_monitoring', {}), 'TOOLS_INVALID_INPUT');
    expect(r.text).toContain('streams');
  });
});

describe('get_unread_messages', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness({ policy: { privateStreams: ['secret'] } });
    await m.call('start_monitoring', { streams: ['general', 'secret'] });
  });
  afterAll(async () => {
    await m.close();
  });

  const read = async (args: Record<string, unknown> = {}) =>
    ok<Unread>(m, 'get_unread_messages', await m.call('get_unread_messages', args));
  /** Reads until nothing is unread, so a test leaves no unread messages behind. */
  const drain = async () => {
    for (let i = 0; i < 20 && (await read()).structured.next_cursor !== null; i++);
  };

  it('returns new messages of every monitored stream oldest first, skips its own and /nobots, and moves the cursors', async () => {
    const a = m.post('secret', 'first, in secret');
    m.h.sim.realm.sendMessage({
      senderId: m.h.realm.bot.userId,
      type: 'stream',
      stream: 'general',
      topic: 'chat',
      content: 'the bot’s own words',
    });
    const b = m.post('general', 'second, in general');
    m.post('general', 'keep this from bots /nobots');
    const c = m.post('secret', 'third <b>bold</b>');
    const { text, structured } = await read();
    expect(structured.ids).toEqual([a, b, c]);
    expect(structured.hidden).toBe(1);
    expect(structured.advanced).toBe(true);
    expect(structured.marked_read).toBeNull();
    expect(structured.next_cursor).toBeNull();
    expect(structured.unreadable).toBe(0);
    // The cursors moved past what was returned, in each stream.
    const cursors = new Map((await m.monitor.list()).map((e) => [e.name, e.lastReadId]));
    expect(cursors.get('general')).toBe(c - 1);
    expect(cursors.get('secret')).toBe(c);
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      '3 unread messages from 2 of 2 monitored streams, oldest first; 1 hidden (/nobots). Cursors moved past them. Nothing more is unread.',
    );
    expect(lines.slice(1)).toHaveLength(3);
    expect(lines[1]).toMatch(new RegExp(`id=${a}\\] \\[#secret > chat\\] Ann Lee: first, in secret$`));
    expect(lines[3]).toContain('third &lt;b>bold&lt;/b>');
    const again = await read();
    expect(again.structured.ids).toEqual([]);
    expect(again.text).toBe('No unread messages in 2 monitored streams. Nothing more is unread.');
  });

  it('peeks without moving the cursors, paging with next_cursor', async () => {
    const ids = [m.post('general', 'p1'), m.post('secret', 'p2'), m.post('general', 'p3')];
    const before = await m.monitor.list();
    const first = await read({ advance: false, limit: 2 });
    expect(first.structured.ids).toEqual(ids.slice(0, 2));
    expect(first.structured.advanced).toBe(false);
    expect(first.text).toContain('Cursors not moved (peek). More unread remain: pass next_cursor as cursor.');
    expect(first.structured.next_cursor).not.toBeNull();
    const second = await read({ advance: false, limit: 2, cursor: first.structured.next_cursor });
    expect(second.structured.ids).toEqual(ids.slice(2));
    expect(second.structured.next_cursor).toBeNull();
    expect(await m.monitor.list()).toEqual(before);
    // Advancing now returns all three again, in pages, and the cursors follow.
    const a1 = await read({ limit: 2 });
    expect(a1.structured.ids).toEqual(ids.slice(0, 2));
    expect(a1.text).toContain('More unread remain: call get_unread_messages again.');
    const a2 = await read({ limit: 2 });
    expect(a2.structured.ids).toEqual(ids.slice(2));
    expect(a2.structured.next_cursor).toBeNull();
  });

  it('cuts a page to the byte budget and continues where it stopped', async () => {
    const small = await m.reopen({ policy: { privateStreams: ['secret'] }, session: 'budget' });
    await small.call('start_monitoring', { streams: ['general'] });
    const big = 'x'.repeat(9_000);
    const ids = [m.post('general', big), m.post('general', big), m.post('general', big)];
    const pages: number[][] = [];
    for (let i = 0; i < 5; i++) {
      const result = await small.call('get_unread_messages', {});
      const page = ok<Unread>(small, 'get_unread_messages', result);
      if (page.structured.ids.length === 0) break;
      expectWithinBudget(result, small.services.pageBudgetBytes);
      pages.push(page.structured.ids);
    }
    expect(pages.flat()).toEqual(ids);
    expect(pages.length).toBeGreaterThan(1);
    await drain();
  });

  it('only reads the streams asked for', async () => {
    const g = m.post('general', 'in general');
    const s = m.post('secret', 'in secret');
    const only = await read({ streams: ['SECRET'] });
    expect(only.structured.ids).toEqual([s]);
    expect(only.text).toMatch(/^1 unread message from 1 of 1 monitored stream,/);
    expect((await read()).structured.ids).toEqual([g]);
  });

  it('sets Zulip’s read flag on exactly the returned messages when asked', async () => {
    const bot = m.h.realm.bot.userId;
    const ids = [m.post('general', 'r1'), m.post('general', 'r2'), m.post('general', 'r3')];
    const { structured, text } = await read({ limit: 2, mark_read_in_zulip: true });
    expect(structured.marked_read).toBe(2);
    expect(text).toContain('Marked 2 messages read in Zulip.');
    expect(ids.map((id) => m.h.sim.realm.flags(bot, id).includes('read'))).toEqual([true, true, false]);
    await read();
    expect(m.h.sim.realm.flags(bot, ids[2] as number)).not.toContain('read');
  });

  it('refuses a stream that is not monitored, and a forged cursor', async () => {
    const r = failed(await m.call('get_unread_messages', { streams: ['dev'] }), 'TOOLS_NOT_FOUND');
    expect(r.text).toContain('"dev" is not monitored');
    failed(await m.call('get_unread_messages', { cursor: 'not-a-cursor' }), 'TOOLS_INVALID_CURSOR');
    const other = encodeCursor('get_unread_messages', { streams: ['general'] }, { kind: 'after', id: 1 });
    failed(await m.call('get_unread_messages', { cursor: other }), 'TOOLS_INVALID_CURSOR');
    failed(await m.call('get_unread_messages', { limit: 0 }), 'TOOLS_INVALID_INPUT');
  });

  it('checks the policy on every read: a stream closed since it was monitored is reported, the rest read', async () => {
    const closed = await m.reopen({ policy: { privateStreams: [] } });
    const s = m.post('secret', 'not for this server');
    const g = m.post('general', 'fine');
    const r = ok<Unread>(closed, 'get_unread_messages', await closed.call('get_unread_messages', {}));
    expect(r.structured.ids).toEqual([g]);
    expect(r.structured.unreadable).toBe(1);
    const cursor = (await closed.monitor.list()).find((e) => e.name === 'secret')?.lastReadId;
    expect(cursor).toBeLessThan(s);
    expect(r.text).toContain('#secret: could not be read (CORE_ACCESS_DENIED');
    expect(r.text).toContain('1 stream could not be read.');
    await drain();
  });

  it('keeps cursors across a restart: another server over the same state directory goes on from them', async () => {
    const seen = m.post('general', 'seen before the restart');
    expect((await read()).structured.ids).toEqual([seen]);
    const later = m.post('general', 'after the restart');
    const restarted = await m.reopen({ policy: { privateStreams: ['secret'] } });
    const r = ok<Unread>(restarted, 'get_unread_messages', await restarted.call('get_unread_messages', {}));
    expect(r.structured.ids).toEqual([later]);
    // And a different session has cursors of its own.
    const other = await m.reopen({ policy: { privateStreams: ['secret'] }, session: 'someone-else' });
    expect(await other.monitor.list()).toEqual([]);
  });
});

describe('get_monitored_channels', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness();
  });
  afterAll(async () => {
    await m.close();
  });

  it('lists streams with cursors and unread counts, paged by name', async () => {
    const empty = ok<Listed>(m, 'get_monitored_channels', await m.call('get_monitored_channels', {}));
    expect(empty.text).toBe('No streams are monitored; call start_monitoring to begin.');
    m.post('general', 'before monitoring');
    await m.call('start_monitoring', { streams: ['general', 'dev'] });
    const [g] = await m.monitor.list().then((l) => l.filter((s) => s.name === 'general'));
    const first = m.post('general', 'one');
    const newest = m.post('general', 'two');
    m.post('general', 'hidden /nobots');
    const { text, structured } = ok<Listed>(
      m,
      'get_monitored_channels',
      await m.call('get_monitored_channels', {}),
    );
    expect(first).toBeLessThan(newest);
    expect(structured.total).toBe(2);
    expect(structured.next_cursor).toBeNull();
    expect(structured.live_updates).toBe(false);
    expect((await m.monitor.list()).find((s) => s.name === 'dev')?.lastReadId).toBeUndefined();
    expect(structured.streams).toEqual([
      {
        stream_id: m.h.realm.streams.dev,
        cursor: null,
        unread: 0,
        unread_more: false,
        newest_id: null,
      },
      {
        stream_id: m.h.realm.streams.general,
        cursor: g?.lastReadId ?? null,
        unread: 2,
        unread_more: false,
        newest_id: newest,
      },
    ]);
    expect(text.split('\n')[0]).toBe('2 monitored streams; 2 unread in them. Live updates: off (idle).');
    expect(text.split('\n').slice(1)).toEqual([
      '#dev: 0 unread, no cursor',
      `#general: 2 unread, newest id=${newest}, cursor id=${g?.lastReadId}`,
    ]);

    const page1 = ok<Listed>(
      m,
      'get_monitored_channels',
      await m.call('get_monitored_channels', { limit: 1 }),
    );
    expect(page1.structured.streams.map((s) => s.stream_id)).toEqual([m.h.realm.streams.dev]);
    expect(page1.text.split('\n')[1]).toMatch(/^#dev: /);
    expect(page1.text).toContain('More streams: pass next_cursor as cursor.');
    const page2 = ok<Listed>(
      m,
      'get_monitored_channels',
      await m.call('get_monitored_channels', { limit: 1, cursor: page1.structured.next_cursor }),
    );
    expect(page2.structured.streams.map((s) => s.stream_id)).toEqual([m.h.realm.streams.general]);
    expect(page2.text.split('\n')[1]).toMatch(/^#general: /);
    expect(page2.structured.next_cursor).toBeNull();
  });

  it('says "N+" past the count limit', async () => {
    for (let i = 0; i < 101; i++) m.post('dev', `flood ${i}`);
    const { structured, text } = ok<Listed>(
      m,
      'get_monitored_channels',
      await m.call('get_monitored_channels', {}),
    );
    const dev = structured.streams.find((s) => s.stream_id === m.h.realm.streams.dev);
    expect(dev).toMatchObject({ unread: 100, unread_more: true, newest_id: m.h.sim.realm.maxMessageId() });
    expect(text).toContain('#dev: 100+ unread');
  });

  it('refuses bad input', async () => {
    failed(await m.call('get_monitored_channels', { limit: 500 }), 'TOOLS_INVALID_INPUT');
    failed(await m.call('get_monitored_channels', { cursor: '!!' }), 'TOOLS_INVALID_CURSOR');
    const wrongKind = encodeCursor('get_monitored_channels', {}, { kind: 'after', id: 3 });
    failed(await m.call('get_monitored_channels', { cursor: wrongKind }), 'TOOLS_INVALID_CURSOR');
  });
});

describe('monitor tools with many streams and a small page', () => {
  let m: MonitorHarness;
  const names: string[] = [];
  beforeAll(async () => {
    m = await startMonitorHarness({ pageBudgetBytes: 4096 });
    const { ann, bot } = m.h.realm;
    for (let i = 0; i < 30; i++) {
      const name = `a rather long stream name number ${i} for the budget`;
      names.push(name);
      m.h.sim.realm.addStream({ name, subscribers: [ann.userId, bot.userId] });
    }
    for (let chunk = 0; chunk < names.length; chunk += 10) {
      ok(
        m,
        'start_monitoring',
        await m.call('start_monitoring', { streams: names.slice(chunk, chunk + 10) }),
      );
    }
    for (const name of names) for (let i = 0; i < 3; i++) m.post(name, `news ${i} in ${name}`);
  });
  afterAll(async () => {
    await m.close();
  });

  it('keeps get_unread_messages and get_monitored_channels inside the budget as text and as JSON', async () => {
    const peek = await m.call('get_unread_messages', { advance: false });
    expectWithinBudget(peek, 4096);
    const listed = await m.call('get_monitored_channels', {});
    expectWithinBudget(listed, 4096);
    // Paging still reaches every stream.
    let cursor: string | null = (
      ok(m, 'get_monitored_channels', listed).structured as { next_cursor: string | null }
    ).next_cursor;
    let seen = (ok(m, 'get_monitored_channels', listed).structured as { streams: unknown[] }).streams.length;
    for (let i = 0; i < 30 && cursor !== null; i++) {
      const next = await m.call('get_monitored_channels', { cursor });
      expectWithinBudget(next, 4096);
      const page = ok<{ streams: unknown[]; next_cursor: string | null }>(m, 'get_monitored_channels', next);
      seen += page.structured.streams.length;
      cursor = page.structured.next_cursor;
    }
    expect(seen).toBe(30);
  });
});
