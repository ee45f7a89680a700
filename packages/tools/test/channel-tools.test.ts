// The Claude Code channel tools, defined beside every other tool: channel_reply answers a channel
// event in its exact topic or DM (posted as every tool posts, long text split, a DM only to people
// the session's sender gate lets through); channel_recent lists the events pushed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChannelEvent, channelCatalog, channelChatId, channelTools } from '../src/index.js';
import { checkedOk, testHost } from './call.js';
import { type Harness, startHarness } from './harness.js';
import { expectFail } from './write-fixtures.js';

const LIMIT = 100;

let h: Harness;
let call: (name: string, args: unknown) => ReturnType<Harness['call']>;
let tools: ReturnType<typeof testHost>['tools'];
const recent: ChannelEvent[] = [];

beforeAll(async () => {
  h = await startHarness({ sim: { maxMessageLength: LIMIT } });
  const allowed = new Set([h.realm.ann.userId]);
  const served = testHost(
    channelCatalog({ services: h.services, allows: async (id) => allowed.has(id), recent }),
  );
  tools = served.tools;
  call = (name, args) => served.host.call(name, args, {});
});
afterAll(async () => {
  await h.close();
});

describe('channel tools', () => {
  it('are defined as every tool is: a toolset, honest annotations, short descriptions', () => {
    expect(channelTools.map((t) => [t.name, t.toolset, t.write])).toEqual([
      ['channel_reply', 'write', true],
      ['channel_recent', 'read', false],
    ]);
    for (const tool of channelTools) {
      expect(tool.annotations.readOnlyHint).toBe(!tool.write);
      expect(tool.description.length).toBeLessThanOrEqual(400);
    }
  });
});

describe('channel_reply', () => {
  it('posts to the exact topic a chat id names, even one with a slash and a percent sign', async () => {
    const topic = 'release 2.0 / 50% [rc]';
    const chatId = channelChatId({ kind: 'stream', streamId: h.realm.streams.general, topic });
    expect(chatId).toBe(`stream:${h.realm.streams.general}/release%202.0%20%2F%2050%25%20%5Brc%5D`);
    const { text, structured } = checkedOk(
      tools,
      'channel_reply',
      await call('channel_reply', { chat_id: chatId, text: 'rolling out' }),
    );
    const [id] = structured.message_ids as number[];
    expect(h.sim.realm.message(id as number)).toMatchObject({ topic, content: 'rolling out' });
    expect(text).toBe(`Sent message ${id} to ${chatId}.`);
  });

  it('follows the conversation when its topic was renamed or moved since its newest event', async () => {
    const asked = h.post(h.realm.ann, 'general', 'old name', 'status of the migration?');
    const chatId = channelChatId({ kind: 'stream', streamId: h.realm.streams.general, topic: 'old name' });
    recent.push({ chatId, content: 'status of the migration?', messageId: asked });
    h.sim.realm.editMessage(h.realm.ann.userId, asked, { topic: '✔ old name', propagateMode: 'change_all' });
    const { text, structured } = checkedOk(
      tools,
      'channel_reply',
      await call('channel_reply', { chat_id: chatId, text: 'migrated' }),
    );
    const [id] = structured.message_ids as number[];
    expect(h.sim.realm.message(id as number)).toMatchObject({ topic: '✔ old name', content: 'migrated' });
    const moved = channelChatId({ kind: 'stream', streamId: h.realm.streams.general, topic: '✔ old name' });
    expect(text).toBe(
      `Sent message ${id} to ${moved} (the conversation moved there from ${chatId}; use the new chat_id).`,
    );
    recent.length = 0;
  });

  it('splits long text into several messages rather than refusing it', async () => {
    const chatId = channelChatId({ kind: 'stream', streamId: h.realm.streams.general, topic: 'long' });
    const long = [1, 2, 3].map((n) => `Part ${n}: ${'x'.repeat(80)}`).join('\n\n');
    const { structured } = checkedOk(
      tools,
      'channel_reply',
      await call('channel_reply', { chat_id: chatId, text: long }),
    );
    const ids = structured.message_ids as number[];
    expect(ids).toHaveLength(3);
    expect(ids.map((id) => h.sim.realm.message(id)?.content.slice(0, 6))).toEqual([
      'Part 1',
      'Part 2',
      'Part 3',
    ]);
  });

  it('writes a DM only to people the sender gate lets through', async () => {
    const toAnn = checkedOk(
      tools,
      'channel_reply',
      await call('channel_reply', {
        chat_id: channelChatId({ kind: 'dm', userIds: [h.realm.ann.userId] }),
        text: 'hi',
      }),
    );
    expect(toAnn.structured.message_ids).toHaveLength(1);
    const before = h.sim.realm.maxMessageId();
    const toBo = expectFail(
      await call('channel_reply', {
        chat_id: channelChatId({ kind: 'dm', userIds: [h.realm.ann.userId, h.realm.bo.userId] }),
        text: 'psst',
      }),
      'CORE_ACCESS_DENIED',
    );
    expect(toBo.text).toContain('not allowed on this channel');
    expect(h.sim.realm.maxMessageId()).toBe(before);
  });

  it('refuses a chat id it did not give, and text of white space alone', async () => {
    expect(
      expectFail(await call('channel_reply', { chat_id: 'general/t', text: 'x' }), 'CORE_INVALID_ARGUMENT')
        .text,
    ).toContain('chat_id');
    expectFail(
      await call('channel_reply', { chat_id: 'stream:1/%E0%A4%A', text: 'x' }),
      'CORE_INVALID_ARGUMENT',
    );
    const blank = expectFail(
      await call('channel_reply', {
        chat_id: channelChatId({ kind: 'stream', streamId: h.realm.streams.general, topic: 't' }),
        text: '   ',
      }),
      'TOOLS_INVALID_INPUT',
    );
    expect(blank.text).toContain('text is empty');
  });
});

describe('channel_recent', () => {
  it('lists the last events pushed, oldest first, chat ids escaped', async () => {
    recent.push({ chatId: 'dm:7', content: 'one' }, { chatId: 'stream:1/<b>', content: 'two' });
    const { text, structured } = checkedOk(
      tools,
      'channel_recent',
      await call('channel_recent', { limit: 1 }),
    );
    expect(structured).toEqual({ shown: 1, total: 2 });
    expect(text).toBe('1 of the last 2 channel events, oldest first.\nchat_id=stream:1/&lt;b> two');
  });
});
