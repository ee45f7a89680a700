import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

const T = Date.UTC(2026, 8, 14, 8, 42, 52);

interface MessageResult {
  message_id: number;
  sender_id: number;
  sender_is_bot: boolean | null;
  stream_id: number | null;
  reactions: { emoji_name: string; count: number; user_ids: number[] }[];
  edited: boolean;
  moved: boolean;
  link: string;
  truncated: boolean;
}

async function ok<T>(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; out: T; result: ToolCallOutcome }> {
  const r = await h.call(name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, name, r);
  return { text: r.text, out: structured as unknown as T, result: r };
}

async function fail(h: Harness, name: string, args: Record<string, unknown>, signal?: AbortSignal) {
  const r = await h.call(name, args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

describe('get_message and get_message_link', () => {
  let h: Harness;
  let plain: number;
  let edited: number;
  let fromBot: number;
  let fromBotLover: number;
  let nobots: number;
  let secret: number;
  let dm: number;
  let ciId: number;
  let loverId: number;

  beforeAll(async () => {
    h = await startHarness({ timeZone: 'Europe/Helsinki', now: () => T, sim: { now: () => T } });
    const { ann, bo, bot } = h.realm;
    // The bot flag comes from the directory, not the address: a bot with a plain address and a
    // human whose address says "bot".
    const ci = h.sim.realm.addUser({
      fullName: 'Build Runner',
      email: 'ci@example.test',
      isBot: true,
      botType: 1,
    });
    const lover = h.sim.realm.addUser({ fullName: 'Robo Fan', email: 'bot.lover@example.test' });
    ciId = ci.userId;
    loverId = lover.userId;
    h.sim.realm.subscribe(ci.userId, 'general');
    h.sim.realm.subscribe(lover.userId, 'general');
    plain = h.post(ann, 'general', 'deploys', 'ship it <now>');
    h.sim.realm.addReaction(ann.userId, plain, 'thumbs_up');
    h.sim.realm.addReaction(bo.userId, plain, 'thumbs_up');
    h.sim.realm.addReaction(bo.userId, plain, 'tada');
    edited = h.post(bo, 'general', 'deploys', 'first draft');
    h.sim.realm.editMessage(bo.userId, edited, { content: 'second draft' });
    h.sim.realm.editMessage(bo.userId, edited, { topic: 'drafts', propagateMode: 'change_one' });
    fromBot = h.post(ci, 'general', 'ci', 'build green');
    fromBotLover = h.post(lover, 'general', 'ci', 'nice build');
    nobots = h.post(ann, 'general', 'deploys', 'this one is mine /nobots');
    secret = h.post(ann, 'secret', 'plans', 'classified');
    dm = h.sim.realm.sendMessage({ senderId: ann.userId, type: 'direct', to: [bot.userId], content: 'psst' });
  });
  afterAll(async () => {
    await h.close();
  });

  it('returns one message with its sender, reactions and link', async () => {
    const { text, out } = await ok<MessageResult>(h, 'get_message', { message_id: plain });
    const { ann, bo } = h.realm;
    expect(out).toMatchObject({
      message_id: plain,
      sender_id: ann.userId,
      sender_is_bot: false,
      stream_id: h.realm.streams.general,
      edited: false,
      moved: false,
      truncated: false,
    });
    expect(out.reactions).toEqual([
      { emoji_name: 'thumbs_up', count: 2, user_ids: [ann.userId, bo.userId] },
      { emoji_name: 'tada', count: 1, user_ids: [bo.userId] },
    ]);
    expect(out.link).toMatch(
      new RegExp(`/#narrow/channel/${h.realm.streams.general}-general/topic/deploys/near/${plain}$`),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      `Message ${plain} in #general > deploys, sent by Ann Lee (ann@example.test, id ${ann.userId}, human).`,
    );
    // The body is escaped for the trust boundary; the structured result carries no body at all.
    expect(JSON.stringify(out)).not.toContain('ship it');
    expect(lines[1]).toBe(
      `[2026-09-14T11:42:52+03:00 id=${plain}] [#general > deploys] Ann Lee: ship it &lt;now>`,
    );
    expect(lines[2]).toBe('Reactions: :thumbs_up: ×2 (Ann Lee, Bo Chen); :tada: ×1 (Bo Chen)');
    expect(lines[3]).toBe(`Link: ${out.link}`);
    expect(lines).toHaveLength(4);
  });

  it('marks edits and moves', async () => {
    const { text, out } = await ok<MessageResult>(h, 'get_message', { message_id: edited });
    expect(out).toMatchObject({ message_id: edited, edited: true, moved: true });
    expect(text.split('\n')[0]).toContain(`Message ${edited} in #general > drafts, sent by Bo Chen`);
    expect(text).toContain('[#general > drafts] Bo Chen: second draft (edited) (moved)');
    expect(text).not.toContain('first draft');
    expect(text).toContain('Edited: 2026-09-14T11:42:52+03:00');
    expect(text).toContain('Moved: 2026-09-14T11:42:52+03:00');
  });

  it('takes the bot flag from the user directory, not from the address', async () => {
    const bot = await ok<MessageResult>(h, 'get_message', { message_id: fromBot });
    expect(bot.out).toMatchObject({ sender_id: ciId, sender_is_bot: true });
    expect(bot.text.split('\n')[0]).toContain(`sent by Build Runner (ci@example.test, id ${ciId}, bot)`);
    const human = await ok<MessageResult>(h, 'get_message', { message_id: fromBotLover });
    expect(human.out).toMatchObject({ sender_id: loverId, sender_is_bot: false });
    expect(human.text.split('\n')[0]).toContain(`(bot.lover@example.test, id ${loverId}, human)`);
  });

  it('reports /nobots and unknown messages as not found', async () => {
    for (const name of ['get_message', 'get_message_link']) {
      const r = await fail(h, name, { message_id: nobots });
      expect(r.code).toBe('TOOLS_NOT_FOUND');
      expect(r.text).not.toContain('this one is mine');
      expect((await fail(h, name, { message_id: 987_654 })).code).toBe('TOOLS_NOT_FOUND');
    }
  });

  it('refuses messages the policy keeps closed, for the link too', async () => {
    for (const name of ['get_message', 'get_message_link']) {
      const missing = await fail(h, name, { message_id: 987_654 });
      const s = await fail(h, name, { message_id: secret });
      expect(s.code).toBe('TOOLS_NOT_FOUND');
      expect(s.text).toBe(missing.text.replace('987654', String(secret)));
      expect(s.text).not.toContain('classified');
      expect(s.text).not.toContain('plans');
      const d = await fail(h, name, { message_id: dm });
      expect(d.code).toBe('TOOLS_NOT_FOUND');
      expect(d.text).not.toContain('psst');
    }
  });

  it('refuses bad arguments, naming the field', async () => {
    for (const name of ['get_message', 'get_message_link']) {
      expect((await fail(h, name, {})).text).toMatch(/message_id/);
      expect((await fail(h, name, { message_id: 0 })).text).toMatch(/message_id/);
      expect((await fail(h, name, { message_id: 1.5 })).text).toMatch(/message_id/);
    }
    expect((await fail(h, 'get_message_link', { message_id: plain, follow_moves: 'yes' })).text).toMatch(
      /follow_moves/,
    );
  });

  it('links a message, near it or with it', async () => {
    const near = await ok<{ message_id: number; conversation: string; url: string }>(h, 'get_message_link', {
      message_id: edited,
    });
    expect(near.out.url).toBe(
      `${h.services.site}/#narrow/channel/${h.realm.streams.general}-general/topic/drafts/near/${edited}`,
    );
    expect(near.text).toBe(`Link to message ${edited} in #general > drafts: ${near.out.url}`);
    const withLink = await ok<{ url: string }>(h, 'get_message_link', {
      message_id: edited,
      follow_moves: true,
    });
    expect(withLink.out.url).toMatch(new RegExp(`/with/${edited}$`));
  });

  it('fails with isError once the deadline has passed', async () => {
    for (const name of ['get_message', 'get_message_link']) {
      expect((await fail(h, name, { message_id: plain }, expiredSignal())).code).toBe('TOOLS_DEADLINE');
    }
  });
});

describe('get_message with DMs open and a small page', () => {
  it('reads a DM and links its conversation', async () => {
    const h = await startHarness({ policy: { privateStreams: '__ALL__' } });
    try {
      const { ann, bot } = h.realm;
      const id = h.sim.realm.sendMessage({
        senderId: ann.userId,
        type: 'direct',
        to: [bot.userId],
        content: 'psst',
      });
      const { text, out } = await ok<MessageResult>(h, 'get_message', { message_id: id });
      expect(text.split('\n')[0]).toMatch(new RegExp(`^Message ${id} in DM with Ann Lee, sent by Ann Lee `));
      expect(out.stream_id).toBeNull();
      const ids = [ann.userId, bot.userId].sort((a, b) => a - b);
      expect(out.link).toBe(`${h.services.site}/#narrow/dm/${ids.join(',')}-dm/near/${id}`);
    } finally {
      await h.close();
    }
  });

  it('cuts a message longer than the page with an explicit marker, keeping the details', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024 });
    try {
      const body = `start ${'q'.repeat(3000)} end`;
      const id = h.post(h.realm.ann, 'general', 'long', body);
      const { text, out, result } = await ok<MessageResult>(h, 'get_message', { message_id: id });
      expect(out).toMatchObject({ message_id: id, truncated: true });
      expect(text).toMatch(/\[… truncated, \d+ more bytes\]/);
      expect(text).toContain('start qqq');
      expect(text).not.toContain(' end');
      expectWithinBudget(result, 1024);
      expect(text.split('\n').at(-1)).toBe(`Link: ${out.link}`);
    } finally {
      await h.close();
    }
  });
});
