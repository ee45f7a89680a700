// The tools on a Zulip 11.0 realm (feature level 421) and a Zulip 13.0-dev realm (512): the same
// answers, in fewer requests where the newer API allows them, and the newer features used only
// where the realm has them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { checkedOk } from './call.js';
import { type Harness, startHarness } from './harness.js';

const LEVELS = [421, 512] as const;
type Level = (typeof LEVELS)[number];

// "Now" is 2026-09-14 12:00 UTC; the log has one message an hour for the 300 hours before it.
const NOW = Date.UTC(2026, 8, 14, 12, 0, 0);
const HOUR = 3600;
const LOG = 300;

const realms = {} as Record<Level, Harness>;

beforeAll(async () => {
  for (const level of LEVELS) {
    const h = await startHarness({ now: () => NOW, sim: { zulipFeatureLevel: level, now: () => NOW } });
    for (let i = 0; i < LOG; i++) {
      h.sim.realm.sendMessage({
        senderId: i % 2 === 0 ? h.realm.ann.userId : h.realm.bo.userId,
        type: 'stream',
        stream: 'general',
        topic: 'log',
        content: `entry ${i}`,
        timestamp: NOW / 1000 - (LOG - i) * HOUR,
      });
    }
    // A channel where only moderators start topics, with one topic a moderator started.
    const mod = h.sim.realm.addUser({ fullName: 'Mo Derator', email: 'mo@example.test', role: 300 });
    h.sim.realm.addStream({
      name: 'announce',
      subscribers: [h.realm.bot.userId, h.realm.ann.userId, mod.userId],
      canCreateTopicGroup: 'role:moderators',
    });
    h.sim.realm.sendMessage({
      senderId: mod.userId,
      type: 'stream',
      stream: 'announce',
      topic: 'release',
      content: 'v2',
    });
    // Mentions: of the bot, of Ann, a wildcard, a silent one, one in a quote, one in code.
    const { ann, bo } = h.realm;
    for (const [who, content] of [
      [bo, '@**Helper Bot** please look at the router'],
      [ann, '@**Bo Chen** the router is yours'],
      [bo, '@**all** the router is down'],
      [ann, '@_**Helper Bot** thanks, silently'],
      [bo, '> @**Helper Bot** quoted, not a mention'],
      [ann, '`@**Helper Bot**` in code, not a mention'],
      [bo, '@**Ann Lee** and @**Helper Bot** both'],
    ] as const) {
      h.sim.realm.sendMessage({
        senderId: who.userId,
        type: 'stream',
        stream: 'general',
        topic: 'router',
        content,
      });
    }
    realms[level] = h;
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(Object.values(realms).map((h) => h.close()));
});

/** Runs a tool call and counts the requests it made (after a warm-up call filled the directory). */
async function counted(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<{
  result: ToolCallOutcome;
  requests: { method: string; path: string; params: Record<string, unknown> }[];
}> {
  await h.call(name, args);
  const mark = h.sim.requests.length;
  const result = await h.call(name, args);
  return { result, requests: h.sim.requests.slice(mark) };
}

/** The text of a result with the realm's own ids and site taken out, for comparing two realms. */
function comparable(h: Harness, text: string): string {
  return text.replaceAll(h.sim.url, 'SITE').replace(/id=\d+|ids? \d+(–\d+)?/g, 'id');
}

describe('natural-date reads', () => {
  it.each([
    ['get_channel_history', { stream: 'general', when: '2026-09-05' }],
    ['get_channel_history', { stream: 'general', topic: 'log', when: '2026-09-02..2026-09-03', limit: 30 }],
    ['search_messages', { query: 'entry', stream: 'general', when: '2026-09-10' }],
  ] as const)(
    '%s %j: the same page on both realms, from the date anchor where it exists',
    async (name, args) => {
      const runs = {} as Record<
        Level,
        { text: string; data: Record<string, unknown>; requests: number; anchors: number }
      >;
      for (const level of LEVELS) {
        const h = realms[level];
        const { result, requests } = await counted(h, name, args);
        const { text, structured } = checkedOk(h.tools, name, result);
        const reads = requests.filter((r) => r.path === '/api/v1/messages');
        runs[level] = {
          text: comparable(h, text),
          data: { ...structured, ids: (structured.ids as number[]).length, next_cursor: undefined },
          requests: requests.length,
          anchors: reads.filter((r) => r.params.anchor === 'date').length,
        };
      }
      expect(runs[512].text).toBe(runs[421].text);
      expect(runs[512].data).toEqual(runs[421].data);
      expect(runs[512].text).toMatch(/\d+ (messages|matches)/);
      expect(runs[512]).toMatchObject({ requests: 1, anchors: 1 });
      expect(runs[421].anchors).toBe(0);
      expect(runs[421].requests).toBeGreaterThan(runs[512].requests);
    },
  );
});

describe('a channel that does not let the bot start topics', () => {
  it('refuses a new topic on 512 with a tool error naming the setting; 421 has no such setting', async () => {
    const args = { stream: 'announce', topic: 'a new thread', content: 'Starting a thread' };
    const old = await realms[421].call('send_message', args);
    expect(old.isError, old.text).toBe(false);
    const h = realms[512];
    const before = h.sim.realm.messageCount();
    const refused = await h.call('send_message', args);
    expect(refused).toMatchObject({ isError: true, code: 'CORE_TOPIC_CREATION_DENIED' });
    expect(refused.text).toContain('can_create_topic_group');
    expect(refused.text).toContain('does not let this bot start new topics');
    expect(refused.text).toContain('reply in a topic that already exists');
    expect(h.sim.realm.messageCount()).toBe(before);
    // The existing topic still takes the reply, on both realms.
    for (const level of LEVELS) {
      const reply = await realms[level].call('send_message', { ...args, topic: 'release' });
      expect(reply.isError, reply.text).toBe(false);
    }
  });

  it('refuses a move into a new topic the same way', async () => {
    const h = realms[512];
    const sent = await h.call('send_message', { stream: 'announce', topic: 'release', content: 'to move' });
    const id = checkedOk(h.tools, 'send_message', sent).structured.message_id as number;
    const moved = await h.call('edit_message', { message_id: id, topic: 'somewhere new' });
    expect(moved).toMatchObject({ isError: true, code: 'CORE_TOPIC_CREATION_DENIED' });
    expect(moved.text).toContain('can_create_topic_group');
  });
});

describe('the link to a sent message', () => {
  it.each([
    ['send_message', { stream: 'general', topic: 'deploy <v2> "ok" 50% (done)', content: 'Shipped.' }],
    ['send_dm', { to: ['Ann Lee'], content: 'A word in private.' }],
  ] as const)('%s: Zulip’s own message_url on 512, the same link built on 421', async (name, args) => {
    const links = {} as Record<Level, string>;
    for (const level of LEVELS) {
      const h = realms[level];
      const answers: Record<string, unknown>[] = [];
      const stop = h.sim.onRequest(
        (r) => {
          if (r.method === 'POST' && r.path === '/api/v1/messages')
            answers.push(r.response as Record<string, unknown>);
        },
        { responses: true },
      );
      const result = await h.call(name, args);
      stop();
      const { text, structured } = checkedOk(h.tools, name, result);
      const link = structured.permalink as string;
      expect(text).toContain(`(${link})`);
      expect(answers).toHaveLength(1);
      if (level >= 508) expect(link).toBe(answers[0]?.message_url);
      else expect(answers[0]?.message_url).toBeUndefined();
      // The web app tags a two-person DM link `-dm` and the server does not; both open the same DM.
      links[level] = link
        .replace(h.sim.url, 'SITE')
        .replace(/\/near\/\d+$/, '/near/ID')
        .replace(/dm\/[\d,]+(-dm)?/, 'dm/IDS');
    }
    expect(links[512]).toBe(links[421]);
  });
});

describe('mentions', () => {
  it('of the bot: the same matches on both realms, by the mentions operator where it exists', async () => {
    const runs = {} as Record<Level, { text: string; count: number; terms: string[] }>;
    for (const level of LEVELS) {
      const h = realms[level];
      const { result, requests } = await counted(h, 'search_messages', {
        mentions: 'Helper Bot',
        stream: 'general',
      });
      const { text, structured } = checkedOk(h.tools, 'search_messages', result);
      const reads = requests.filter((r) => r.path === '/api/v1/messages');
      runs[level] = {
        text: comparable(h, text),
        count: (structured.ids as number[]).length,
        terms: reads.flatMap((r) =>
          (JSON.parse(String(r.params.narrow)) as { operator: string }[]).map((t) => t.operator),
        ),
      };
    }
    expect(runs[512].count).toBe(2);
    expect(runs[512].text).toBe(runs[421].text);
    expect(runs[512].text).toContain('mentioning Helper Bot');
    expect(runs[512].text).toContain('please look at the router');
    expect(runs[512].text).toContain('both');
    expect(runs[512].text).not.toMatch(/@\*\*all\*\*|silently|quoted|in code/);
    expect(runs[512].terms).toContain('mentions');
    expect(runs[421].terms).not.toContain('mentions');
  });

  it('of someone else: found on 512, refused on 421 with what to do instead', async () => {
    const found = await realms[512].call('search_messages', {
      mentions: 'ann@example.test',
      stream: 'general',
    });
    const { text, structured } = checkedOk(realms[512].tools, 'search_messages', found);
    expect(structured.ids).toHaveLength(1);
    expect(text).toContain('@**Ann Lee** and @**Helper Bot** both');
    const mark = realms[421].sim.requests.length;
    const refused = await realms[421].call('search_messages', {
      mentions: 'ann@example.test',
      stream: 'general',
    });
    expect(refused).toMatchObject({ isError: true, code: 'TOOLS_INVALID_INPUT' });
    expect(refused.text).toContain('mentions: this realm runs Zulip at feature level 421');
    expect(refused.text).toContain('query');
    expect(realms[421].sim.requests.slice(mark).filter((r) => r.path === '/api/v1/messages')).toHaveLength(0);
  });
});

describe('attachments with the messages that link them', () => {
  it('list_attachments answers the same on both realms (message_ids on 512, messages[] on 421)', async () => {
    const runs = {} as Record<Level, { text: string; data: unknown; requests: string[] }>;
    for (const level of LEVELS) {
      const h = realms[level];
      const { bot } = h.realm;
      const up = h.sim.realm.upload(
        bot.userId,
        'report <final>.txt',
        new TextEncoder().encode('numbers'),
        'text/plain',
      );
      const say = (stream: string, content: string) =>
        h.sim.realm.sendMessage({
          senderId: bot.userId,
          type: 'stream',
          stream,
          topic: 'files',
          content,
          client: 'API',
        });
      const first = say('general', `the report: [report](${up.url})`);
      const second = say('general', `again: [report](${up.url})`);
      say('secret', `for the secret stream: [report](${up.url})`);
      h.sim.realm.upload(bot.userId, 'unused.bin', new Uint8Array([1, 2, 3]), 'application/octet-stream');
      // A file linked only in a stream this session may not read: counted, never named.
      const closed = h.sim.realm.upload(bot.userId, 'closed-plans.txt', new Uint8Array([7]), 'text/plain');
      say('secret', `only here: [plans](${closed.url})`);
      const { result, requests } = await counted(h, 'list_attachments', {});
      const { text, structured } = checkedOk(h.tools, 'list_attachments', result);
      const files = structured.attachments as { message_ids: number[]; withheld: number; path: string }[];
      expect(files.map((f) => [f.message_ids, f.withheld])).toEqual([
        [[], 0],
        [[first, second], 1],
      ]);
      expect(text).toContain(
        `linked from ${first} (#general > files), ${second} (#general > files); 1 message you may not read`,
      );
      // Zulip stores a sanitized name (the line escapes whatever it gets).
      expect(text).toContain('report-final.txt (7 bytes, /user_uploads/');
      expect(text).not.toContain('secret stream');
      expect(text).not.toContain('closed-plans');
      expect(text).toContain('1 more file only in conversations you may not read.');
      expect(structured.closed_files).toBe(1);
      runs[level] = {
        text: comparable(h, text)
          .replace(/\/user_uploads\/\S+?,/g, 'PATH,')
          .replace(/\d+ \(#/g, 'N (#'),
        data: files.map((f) => ({ ...f, path: '', message_ids: f.message_ids.length })),
        requests: requests.map((r) => `${r.method} ${r.path}`),
      };
    }
    expect(runs[512].text).toBe(runs[421].text);
    expect(runs[512].data).toEqual(runs[421].data);
    // One list and one read of the linking messages, on both realms.
    expect(runs[512].requests).toEqual(['GET /api/v1/attachments', 'GET /api/v1/messages']);
    expect(runs[421].requests).toEqual(runs[512].requests);
  });
});
