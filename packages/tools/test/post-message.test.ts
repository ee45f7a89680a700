// postMessage, the one way a message is posted (every send tool, channel_reply, an MCPL publish):
// the write policy, the Markdown fixes, the length measured after them with an explicit choice for
// over-long text (refuse or split), each message sent once, and what came of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postMessage } from '../src/index.js';
import type { Posted } from '../src/write/post.js';
import { type Harness, startHarness } from './harness.js';

const LIMIT = 120;

let h: Harness;
let restricted: Harness;
beforeAll(async () => {
  h = await startHarness({ sim: { maxMessageLength: LIMIT } });
  restricted = await startHarness({ policy: { writeStreams: ['general'] } });
});
afterAll(async () => {
  await h.close();
  await restricted.close();
});

const signal = () => AbortSignal.timeout(15_000);
const paragraph = (n: number) => `Paragraph ${n}: ${'words '.repeat(12).trim()}.`;
const LONG = [1, 2, 3, 4].map(paragraph).join('\n\n');

function posted(result: Awaited<ReturnType<typeof postMessage>>): Posted {
  if ('isError' in result) throw new Error(`${result.code}: ${result.text}`);
  return result;
}

describe('postMessage', () => {
  it('refuses over-long text when asked to, measured after the Markdown fixes, and sends nothing', async () => {
    expect([...LONG].length).toBeGreaterThan(LIMIT);
    const before = h.sim.realm.maxMessageId();
    await expect(
      postMessage(h.services, { kind: 'stream', streamId: h.realm.streams.general, topic: 't' }, LONG, {
        overLength: 'refuse',
        signal: signal(),
      }),
    ).rejects.toMatchObject({ code: 'CORE_MESSAGE_TOO_LONG', details: { limit: LIMIT } });
    // A table the fixes give a blank line: it is measured with that line.
    const table = `${'x'.repeat(LIMIT - 12)}\n| a |\n|---|`;
    expect([...table].length).toBe(LIMIT);
    await expect(
      postMessage(h.services, { kind: 'stream', streamId: h.realm.streams.general, topic: 't' }, table, {
        overLength: 'refuse',
        signal: signal(),
      }),
    ).rejects.toMatchObject({ code: 'CORE_MESSAGE_TOO_LONG', details: { length: LIMIT + 1 } });
    expect(h.sim.realm.maxMessageId()).toBe(before);
  });

  it('splits over-long text when asked to: parts in order, each within the limit, each reported as sent', async () => {
    const seen: number[] = [];
    const result = posted(
      await postMessage(
        h.services,
        { kind: 'stream', streamId: h.realm.streams.general, topic: 'Split' },
        LONG,
        {
          overLength: 'split',
          signal: signal(),
          onSent: (id) => seen.push(id),
        },
      ),
    );
    expect(result.ids.length).toBeGreaterThan(1);
    expect(seen).toEqual(result.ids);
    const stored = result.ids.map((id) => h.sim.realm.message(id));
    expect(stored.map((m) => m?.topic)).toEqual(result.ids.map(() => 'Split'));
    expect(stored.every((m) => [...(m?.content ?? '')].length <= LIMIT)).toBe(true);
    expect(stored.map((m) => m?.content).join('\n\n')).toBe(LONG);
    expect(result.contents.map((c) => c.trimEnd())).toEqual(stored.map((m) => m?.content));
    expect(result.length).toBe([...LONG].length);
    expect(result.permalink).toMatch(
      new RegExp(`#narrow/channel/${h.realm.streams.general}-general/topic/Split/near/${result.ids[0]}$`),
    );
  });

  it('posts a DM by the other people’s ids and links it with the bot among its participants', async () => {
    const result = posted(
      await postMessage(h.services, { kind: 'dm', userIds: [h.realm.ann.userId] }, 'hi', {
        overLength: 'refuse',
        signal: signal(),
      }),
    );
    const [id] = result.ids;
    expect(h.sim.realm.message(id as number)).toMatchObject({ type: 'direct', content: 'hi' });
    const ids = [h.realm.ann.userId, h.realm.bot.userId].sort((a, b) => a - b);
    expect(result.permalink).toMatch(new RegExp(`#narrow/dm/${ids.join(',')}-dm/near/${id}$`));
  });

  it('checks the write policy first, whichever way over-long text goes', async () => {
    const before = restricted.sim.realm.maxMessageId();
    for (const overLength of ['refuse', 'split'] as const) {
      await expect(
        postMessage(
          restricted.services,
          { kind: 'stream', streamId: restricted.realm.streams.dev, topic: 't' },
          'hello',
          { overLength, signal: signal() },
        ),
      ).rejects.toMatchObject({ code: 'CORE_ACCESS_DENIED' });
      await expect(
        postMessage(restricted.services, { kind: 'dm', userIds: [restricted.realm.ann.userId] }, 'hello', {
          overLength,
          signal: signal(),
        }),
      ).rejects.toMatchObject({ code: 'CORE_ACCESS_DENIED' });
    }
    expect(restricted.sim.realm.maxMessageId()).toBe(before);
  });

  it('refuses nothing to send, naming the field the text came in', async () => {
    await expect(
      postMessage(h.services, { kind: 'stream', streamId: h.realm.streams.general, topic: 't' }, '  \n ', {
        overLength: 'split',
        field: 'text',
        signal: signal(),
      }),
    ).rejects.toMatchObject({ code: 'TOOLS_INVALID_INPUT', details: { field: 'text' } });
  });

  it('after a part went out, a failed part comes back as a failure naming what was posted', async () => {
    let fault: { remove(): void } | undefined;
    const result = await postMessage(
      h.services,
      { kind: 'stream', streamId: h.realm.streams.general, topic: 'Partial' },
      LONG,
      {
        overLength: 'split',
        signal: signal(),
        // Zulip fails the send after the first part went out.
        onSent: () => {
          fault ??= h.sim.faults.add({ method: 'POST', path: '/messages', status: 500, times: 1 });
        },
      },
    );
    fault?.remove();
    if (!('isError' in result)) throw new Error('expected a failure');
    expect(result.code).toBe('CORE_SERVER_ERROR');
    const first = h.sim.realm.maxMessageId();
    expect(h.sim.realm.message(first)).toMatchObject({ topic: 'Partial' });
    expect(result.text).toMatch(
      new RegExp(`^Sent 1 of \\d+ parts \\(message ids ${first}\\); part 2 was not sent`),
    );
    expect(result.text).toContain('Read the conversation before sending the rest');
  });

  it('a send whose outcome is unknown says to look before sending again', async () => {
    const fault = h.sim.faults.add({ method: 'POST', path: '/messages', dropConnection: true, times: 1 });
    const result = await postMessage(
      h.services,
      { kind: 'stream', streamId: h.realm.streams.general, topic: 'Unknown' },
      'once only',
      { overLength: 'refuse', signal: signal() },
    );
    fault.remove();
    if (!('isError' in result)) throw new Error('expected a failure');
    expect(result.code).toBe('CORE_NETWORK');
    expect(result.text).toContain('may or may not have been posted');
  });
});
