// Send once: a repeat of a send that succeeded minutes ago (a new request, the same words) is
// refused with the earlier message's id and link, unless the call says it means to repeat. One
// rule, inside postMessage, shared by send_message, send_dm, reply, channel_reply and MCPL publish.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore, stateAccount } from '@zmcp/delivery';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  channelCatalog,
  postMessage,
  SendOnce,
  type ToolCallOutcome,
  type ToolServices,
} from '../src/index.js';
import { callThrough, testHost } from './call.js';
import { type Harness, startHarness } from './harness.js';
import { closeSessions, sessionRig } from './session-fixtures.js';

let h: Harness;
let now = 1_800_000_000_000;
let dir: string;
beforeAll(async () => {
  h = await startHarness({ now: () => now });
  dir = await mkdtemp(join(tmpdir(), 'zmcp-send-once-'));
});
afterEach(async () => {
  await closeSessions();
});
afterAll(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});

const signal = () => AbortSignal.timeout(15_000);
/** How many messages the bot has posted. */
function botMessages(): number {
  let n = 0;
  for (let id = 1; id <= h.sim.realm.maxMessageId(); id++) {
    if (h.sim.realm.message(id)?.senderId === h.realm.bot.userId) n++;
  }
  return n;
}

/** The code of a failed call, or undefined when it succeeded. */
function codeOf(out: { isError?: boolean; code?: string } | ToolCallOutcome): string | undefined {
  return out.isError === true ? (out as { code: string }).code : undefined;
}

/** Services over the harness with a send memory of their own (a fresh process, or one sharing `store`). */
function servicesWith(options: ConstructorParameters<typeof SendOnce>[0]): ToolServices {
  return { ...h.services, sendOnce: new SendOnce({ now: () => now, ...options }) };
}

describe('send once', () => {
  it('refuses a repeated successful send once, naming the earlier message, and sends it when asked to repeat', async () => {
    const args = { stream: 'general', topic: 'release', content: 'Deployed **v2** to production.' };
    const first = await h.call('send_message', args);
    if (first.isError === true) throw new Error(first.text);
    const id = first.structured.message_id as number;
    const before = botMessages();
    now += 60_000;
    // A model that lost track sends the same words again, spaced differently: nothing is posted.
    const again = await h.call('send_message', { ...args, content: '  Deployed **v2**\nto production. ' });
    expect(again.isError).toBe(true);
    if (again.isError !== true) return;
    expect(again.code).toBe('TOOLS_ALREADY_SENT');
    expect(again.text).toContain(`as message ${id}`);
    expect(again.text).toContain(first.structured.permalink as string);
    expect(again.text).toContain('60 s ago');
    expect(again.text).toContain('repeat: true');
    expect(botMessages()).toBe(before);
    // Said on purpose: it goes out.
    const repeated = await h.call('send_message', { ...args, repeat: true });
    expect(repeated.isError, repeated.text).toBe(false);
    expect(botMessages()).toBe(before + 1);
  });

  it('does not refuse another topic, other words, a DM, or the same words once the window has passed', async () => {
    const text = 'Standup in 5 minutes.';
    const ok = async (name: string, args: Record<string, unknown>) => {
      const out = await h.call(name, args);
      expect(out.isError, out.text).toBe(false);
    };
    await ok('send_message', { stream: 'general', topic: 'standup', content: text });
    await ok('send_message', { stream: 'general', topic: 'standup-2', content: text });
    await ok('send_message', { stream: 'general', topic: 'standup', content: 'Standup in 10 minutes.' });
    await ok('send_dm', { to: ['Bo Chen'], content: text });
    expect(codeOf(await h.call('send_dm', { to: ['Bo Chen'], content: text }))).toBe('TOOLS_ALREADY_SENT');
    // Topics compare as Zulip compares them: case aside.
    expect(codeOf(await h.call('send_message', { stream: 'general', topic: 'STANDUP', content: text }))).toBe(
      'TOOLS_ALREADY_SENT',
    );
    now += 300_001;
    await ok('send_message', { stream: 'general', topic: 'standup', content: text });
  });

  it('does not remember a failed send', async () => {
    const args = { stream: 'general', topic: 'flaky', content: 'The build is green.' };
    const fault = h.sim.faults.add({ method: 'POST', path: '/messages', status: 400, times: 1 });
    const failed = await h.call('send_message', args);
    expect(failed.isError).toBe(true);
    expect(fault.hits).toBe(1);
    const retried = await h.call('send_message', args);
    expect(retried.isError, retried.text).toBe(false);
  });

  it('is one rule for every way of posting: reply, channel_reply and postMessage share it', async () => {
    const text = 'Looking into it now.';
    const rig = sessionRig(h);
    expect((await rig.call('set_context', { stream: 'general', topic: 'incident' })).isError).toBe(false);
    expect((await rig.call('reply', { content: text })).isError).toBe(false);
    expect(codeOf(await rig.call('reply', { content: text }))).toBe('TOOLS_ALREADY_SENT');
    const channel = testHost(channelCatalog({ services: h.services, allows: async () => true, recent: [] }));
    const chatId = `stream:${h.realm.streams.general}/incident`;
    const viaChannel = await callThrough(channel.host, 'channel_reply', { chat_id: chatId, text });
    expect(codeOf(viaChannel)).toBe('TOOLS_ALREADY_SENT');
    const to = { kind: 'stream', streamId: h.realm.streams.general, topic: 'incident' } as const;
    await expect(
      postMessage(h.services, to, text, { overLength: 'split', signal: signal() }),
    ).rejects.toMatchObject({
      code: 'TOOLS_ALREADY_SENT',
    });
    const viaRepeat = await callThrough(channel.host, 'channel_reply', {
      chat_id: chatId,
      text,
      repeat: true,
    });
    expect(viaRepeat.isError, viaRepeat.text).toBe(false);
  });

  it('lets only one of two identical sends at once go out', async () => {
    const args = { stream: 'general', topic: 'race', content: 'Rolling back.' };
    const before = botMessages();
    const outcomes = await Promise.all([h.call('send_message', args), h.call('send_message', args)]);
    expect(outcomes.map((o) => o.isError === true).sort()).toEqual([false, true]);
    expect(botMessages()).toBe(before + 1);
  });

  it('remembers per account in the state store: a restarted process, or a second one, refuses too', async () => {
    const store = new FileStateStore({ dir });
    const account = stateAccount({ site: h.services.site, userId: h.realm.bot.userId });
    const to = { kind: 'stream', streamId: h.realm.streams.general, topic: 'shared store' } as const;
    const text = 'Backups verified.';
    const first = await postMessage(servicesWith({ store, account }), to, text, {
      overLength: 'refuse',
      signal: signal(),
    });
    expect('isError' in first).toBe(false);
    await expect(
      postMessage(servicesWith({ store: new FileStateStore({ dir }), account }), to, text, {
        overLength: 'refuse',
        signal: signal(),
      }),
    ).rejects.toMatchObject({ code: 'TOOLS_ALREADY_SENT' });
    // Another account's memory is its own.
    const other = stateAccount({ site: 'https://other.example.com', userId: h.realm.bot.userId });
    const elsewhere = await postMessage(servicesWith({ store, account: other }), to, text, {
      overLength: 'refuse',
      signal: signal(),
      repeat: false,
    });
    expect('isError' in elsewhere).toBe(false);
    // What is kept is hashes and ids, never the text.
    const file = await readFile(join(dir, account, 'outbox.sends.json'), 'utf8');
    expect(file).not.toContain('Backups');
    // Off: a window of 0 remembers nothing.
    const off = servicesWith({ windowMs: 0 });
    for (let i = 0; i < 2; i++) {
      const out = await postMessage(off, to, 'Twice on purpose.', { overLength: 'refuse', signal: signal() });
      expect('isError' in out).toBe(false);
    }
  });
});
