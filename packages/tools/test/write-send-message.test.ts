import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessageTool } from '../src/write/send-message.js';
import { type Harness, startHarness } from './harness.js';
import { callWith, expectFail, expectOk } from './write-fixtures.js';

const TABLE = 'Results:\n| a | b |\n|---|---|\n| 1 | 2 |';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ uploadRoot: true });
});
afterAll(async () => {
  await h.close();
});

describe('send_message', () => {
  it('posts to a stream topic and returns the id, the permalink and the message line', async () => {
    const { text, structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', { stream: 'general', topic: 'greetings', content: 'Hello **world**' }),
    );
    const id = structured.message_id as number;
    const stored = h.sim.realm.message(id);
    expect(stored).toMatchObject({
      type: 'stream',
      senderId: h.realm.bot.userId,
      streamId: h.realm.streams.general,
      topic: 'greetings',
      content: 'Hello **world**',
    });
    // Sent as read by its sender: the bot's own message is not unread for it.
    expect(h.sim.realm.flags(h.realm.bot.userId, id)).toContain('read');
    const [summary, line] = text.split('\n');
    expect(summary).toBe(`Sent message ${id} to #general > greetings (${structured.permalink}).`);
    expect(line).toMatch(
      new RegExp(`^\\[\\S+ id=${id}\\] \\[#general > greetings\\] Helper Bot: Hello \\*\\*world\\*\\*$`),
    );
    expect(structured.permalink).toMatch(
      new RegExp(`#narrow/channel/${h.realm.streams.general}-general/topic/greetings/near/${id}$`),
    );
    expect(structured).toEqual({
      message_id: id,
      permalink: structured.permalink,
      stream_id: h.realm.streams.general,
      attachments: 0,
      normalized: false,
      length: 15,
      limit: 10_000,
    });
  });

  it('takes a stream id and trims the topic', async () => {
    const { structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', { stream: h.realm.streams.dev, topic: '  builds  ', content: 'green' }),
    );
    expect(h.sim.realm.message(structured.message_id as number)).toMatchObject({
      streamId: h.realm.streams.dev,
      topic: 'builds',
    });
  });

  it('refuses bad input by field, sending nothing', async () => {
    const before = h.sim.realm.messageCount();
    const missing = expectFail(
      await h.call('send_message', { stream: 'general', content: 'x' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(missing.text).toContain('topic');
    const empty = expectFail(
      await h.call('send_message', { stream: 'general', topic: '   ', content: 'x' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(empty.text).toContain('topic is empty');
    const long = expectFail(
      await h.call('send_message', { stream: 'general', topic: 't'.repeat(61), content: 'x' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(long.text).toContain('61');
    expect(long.text).toContain('60');
    const nothing = expectFail(
      await h.call('send_message', { stream: 'general', topic: 't', content: '  \n' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(nothing.text).toContain('content is empty');
    const unknown = expectFail(
      await h.call('send_message', { stream: 'nowhere', topic: 't', content: 'x' }),
      'TOOLS_NOT_FOUND',
    );
    expect(unknown.text).toContain('"nowhere"');
    expectFail(
      await h.call('send_message', { stream: 'general', topic: 'opt out /nobots', content: 'x' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(h.sim.realm.messageCount()).toBe(before);
  });

  it('counts a 60-character topic of astral characters as 60', async () => {
    const topic = '😀'.repeat(60);
    const { structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', { stream: 'general', topic, content: 'x' }),
    );
    expect(h.sim.realm.message(structured.message_id as number)?.topic).toBe(topic);
  });

  it('refuses content over the realm limit with both numbers, and sends nothing', async () => {
    const before = h.sim.realm.messageCount();
    const res = expectFail(
      await h.call('send_message', { stream: 'general', topic: 'long', content: 'x'.repeat(10_001) }),
      'CORE_MESSAGE_TOO_LONG',
    );
    expect(res.text).toContain('10001');
    expect(res.text).toContain('10000');
    expect(h.sim.realm.messageCount()).toBe(before);
  });

  it('measures after normalization: the blank line a table gets can push content over the limit', async () => {
    const content = `${TABLE}\n${'y'.repeat(10_000 - TABLE.length - 1)}`;
    expect(content.length).toBe(10_000);
    const before = h.sim.realm.messageCount();
    const res = expectFail(
      await h.call('send_message', { stream: 'general', topic: 'long', content }),
      'CORE_MESSAGE_TOO_LONG',
    );
    expect(res.text).toContain('10001');
    expect(h.sim.realm.messageCount()).toBe(before);
    // With the fixes off the same text fits.
    const off = await callWith(
      sendMessageTool,
      { ...h.services, markdownAutofix: false },
      {
        stream: 'general',
        topic: 'long',
        content,
      },
    );
    expect(off.isError).not.toBe(true);
  });

  it('normalizes Markdown: a table after a paragraph gets its blank line', async () => {
    const { structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', { stream: 'general', topic: 'tables', content: TABLE }),
    );
    expect(structured.normalized).toBe(true);
    expect(h.sim.realm.message(structured.message_id as number)?.content).toBe(
      'Results:\n\n| a | b |\n|---|---|\n| 1 | 2 |',
    );
  });

  it('leaves Markdown alone when the fixes are switched off', async () => {
    const res = await callWith(
      sendMessageTool,
      { ...h.services, markdownAutofix: false },
      {
        stream: 'general',
        topic: 'tables, unfixed',
        content: TABLE,
      },
    );
    if (res.isError === true) throw new Error(res.text);
    expect(res.structured.normalized).toBe(false);
    expect(h.sim.realm.message(res.structured.message_id as number)?.content).toBe(TABLE);
  });

  it('attaches a file from an upload root and inline data, links appended', async () => {
    await writeFile(join(h.uploadDir as string, 'file.txt'), 'file bytes\n');
    const uploadsBefore = h.sim.realm.uploads().length;
    const { text, structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', {
        stream: 'general',
        topic: 'files',
        content: 'Two files:',
        attachments: [
          { file: 'work/file.txt' },
          { data: Buffer.from('a,b\n1,2\n').toString('base64'), name: 'table.csv' },
        ],
      }),
    );
    expect(structured.attachments).toBe(2);
    const uploads = h.sim.realm.uploads().slice(uploadsBefore);
    expect(uploads.map((u) => Buffer.from(u.bytes).toString())).toEqual(['file bytes\n', 'a,b\n1,2\n']);
    const stored = h.sim.realm.message(structured.message_id as number);
    expect(stored?.content).toBe(
      `Two files:\n[file.txt](${uploads[0]?.url})\n[table.csv](${uploads[1]?.url})`,
    );
    const [summary, ...line] = text.split('\n');
    expect(summary).toContain('with 2 attachments');
    // The message line shows the body as sent, links included.
    expect(line.join('\n')).toContain(`[table.csv](${uploads[1]?.url})`);
  });

  it('sends attachments alone when content is omitted', async () => {
    const uploadsBefore = h.sim.realm.uploads().length;
    const { structured } = expectOk(
      h,
      'send_message',
      await h.call('send_message', {
        stream: 'general',
        topic: 'files',
        attachments: [{ data: Buffer.from('hi').toString('base64'), name: 'hi.txt' }],
      }),
    );
    expect(structured.attachments).toBe(1);
    const [upload] = h.sim.realm.uploads().slice(uploadsBefore);
    expect(h.sim.realm.message(structured.message_id as number)?.content).toBe(`[hi.txt](${upload?.url})`);
  });

  it('refuses a path escaping the root, naming the roots, and uploads nothing', async () => {
    const before = { messages: h.sim.realm.messageCount(), uploads: h.sim.realm.uploads().length };
    const res = expectFail(
      await h.call('send_message', {
        stream: 'general',
        topic: 'files',
        content: 'x',
        attachments: [
          { data: Buffer.from('a').toString('base64'), name: 'a.txt' },
          { file: 'work/../outside.txt' },
        ],
      }),
      'UPLOAD_PATH_ESCAPE',
    );
    expect(res.text).toContain('upload roots: work');
    const other = expectFail(
      await h.call('send_message', {
        stream: 'general',
        topic: 'files',
        attachments: [{ file: 'elsewhere/x.txt' }],
      }),
      'UPLOAD_UNKNOWN_ROOT',
    );
    expect(other.text).toContain('work');
    expect(h.sim.realm.messageCount()).toBe(before.messages);
    expect(h.sim.realm.uploads().length).toBe(before.uploads);
  });

  it('counts the attachment links against the limit before uploading anything', async () => {
    const before = { messages: h.sim.realm.messageCount(), uploads: h.sim.realm.uploads().length };
    const res = expectFail(
      await h.call('send_message', {
        stream: 'general',
        topic: 'files',
        content: 'z'.repeat(9_990),
        attachments: [{ data: Buffer.from('a').toString('base64'), name: 'a.txt' }],
      }),
      'CORE_MESSAGE_TOO_LONG',
    );
    expect(res.text).toMatch(/at least \d{5} characters long with the links to its 1 attachment/);
    expect(res.text).toContain('10000');
    expect(h.sim.realm.messageCount()).toBe(before.messages);
    expect(h.sim.realm.uploads().length).toBe(before.uploads);
  });

  it('never retries a send on its own: a 500 is reported and the realm holds nothing', async () => {
    const before = h.sim.realm.messageCount();
    const fault = h.sim.faults.add({ method: 'POST', path: '/messages', status: 500, times: 1 });
    try {
      const res = expectFail(
        await h.call('send_message', { stream: 'general', topic: 'retry', content: 'once' }),
        'CORE_SERVER_ERROR',
      );
      expect(res.text).toContain('may or may not have been posted');
      expect(res.text).toContain('before sending again');
      expect(fault.hits).toBe(1);
    } finally {
      fault.remove();
    }
    expect(h.sim.realm.messageCount()).toBe(before);
  });

  it('never retries a send whose answer was lost: the message exists exactly once', async () => {
    const before = h.sim.realm.messageCount();
    const fault = h.sim.faults.add({ method: 'POST', path: '/messages', dropConnection: true, times: 1 });
    try {
      const res = await h.call('send_message', {
        stream: 'general',
        topic: 'retry',
        content: 'exactly once',
      });
      expect(res.isError).toBe(true);
      expect(res.isError === true && res.text).toContain('may or may not have been posted');
      expect(fault.hits).toBe(1);
    } finally {
      fault.remove();
    }
    expect(h.sim.realm.messageCount()).toBe(before + 1);
  });
});

describe('send_message permissions', () => {
  let limited: Harness;
  beforeAll(async () => {
    limited = await startHarness({ policy: { writeStreams: ['dev'] } });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('writes only to allowlisted streams', async () => {
    const before = limited.sim.realm.messageCount();
    const res = expectFail(
      await limited.call('send_message', { stream: 'general', topic: 't', content: 'x' }),
      'CORE_ACCESS_DENIED',
    );
    expect(res.text).toContain('writeStreams');
    expect(limited.sim.realm.messageCount()).toBe(before);
    expectOk(
      limited,
      'send_message',
      await limited.call('send_message', { stream: 'dev', topic: 't', content: 'x' }),
    );
    expect(limited.sim.realm.messageCount()).toBe(before + 1);
  });

  it('refuses a private stream the policy cannot read, and one the bot cannot see', async () => {
    const before = h.sim.realm.messageCount();
    const secret = expectFail(
      await h.call('send_message', { stream: 'secret', topic: 't', content: 'x' }),
      'CORE_ACCESS_DENIED',
    );
    expect(secret.text).toMatch(/stream id \d+ is not allowed/);
    expectFail(
      await h.call('send_message', { stream: 'hidden', topic: 't', content: 'x' }),
      'TOOLS_NOT_FOUND',
    );
    expect(h.sim.realm.messageCount()).toBe(before);
  });
});
