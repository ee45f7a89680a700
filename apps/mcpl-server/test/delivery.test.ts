// What zulip-mcpl delivers beyond the basics, driven by a test host from @zmcp/mcpl's host role:
// edit/move/delete lines, catch-up after a restart, queue-expiry healing, rollback, context
// injection, filters hot reload, images, attribution, and one hung request never stalling others.
import { rename, writeFile } from 'node:fs/promises';
import type { FiltersEvent } from '@zmcp/delivery';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { FULL_GRANT, type Realm, realmPerTest, textOf } from './world.js';

let realm: Realm;
const { start, stop } = realmPerTest((r) => {
  realm = r;
});

describe('changes of messages the host has seen', () => {
  it('surfaces an edit, a topic move and a deletion as lines with the message’s own id', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const id = realm.say('general', 'ship it');
    await s.incoming.first((m) => m.messageId === String(id));

    realm.sim.realm.editMessage(realm.ann, id, { content: 'ship it tomorrow' });
    const edited = await s.incoming.first((m) => m.messageId.startsWith(`edit:${id}:`));
    expect(textOf(edited)).toMatch(
      new RegExp(`^\\[edited\\] \\[[^\\]]* id=${id}\\] \\[#general > deploys\\] Ann Lee: `),
    );
    expect(edited.tags).toContain('chat:edited');
    expect(edited.threadId).toBeUndefined();
    expect(edited.metadata).toMatchObject({ kind: 'edited', zulipMessageId: id, previousContent: 'ship it' });

    realm.sim.realm.editMessage(realm.ann, id, { topic: 'deploys-2', propagateMode: 'change_one' });
    const moved = await s.incoming.first((m) => m.messageId.startsWith(`move:${id}:`));
    expect(textOf(moved).startsWith('[moved] ')).toBe(true);
    expect(moved.tags).toEqual(expect.arrayContaining(['chat:edited', 'zulip:moved']));

    realm.sim.realm.deleteMessage(realm.ann, id);
    const deleted = await s.incoming.first((m) => m.messageId.startsWith(`delete:${id}:`));
    expect(textOf(deleted).startsWith('[deleted] ')).toBe(true);
    expect(deleted.tags).toContain('chat:deleted');
  });
});

describe('catch-up and gaps', () => {
  it('catches up after a restart: a full block for a channel that was open, mentions in context for one that was not', async () => {
    const first = await start();
    await first.host.openChannel({ channelId: 'zulip:general' });
    const seen = realm.say('general', 'before the restart');
    await first.incoming.first((m) => m.messageId === String(seen));
    // The server has read the host's acceptance before the host goes away.
    await first.settled('zulip:general');
    await stop(first);

    const away = [realm.say('general', 'while you were away'), realm.say('general', 'and this too')];
    realm.say('random', 'ambient while away');
    const mention = realm.say('random', 'need you @**Helper Bot**');

    const second = await start();
    await second.pushes.until((items) => items.filter((e) => e.tags.includes('zulip:missed')).length >= 2);
    const blocks = second.pushes.items.filter((e) => e.tags.includes('zulip:missed'));
    const general = blocks.find((b) => b.origin?.channelId === 'zulip:general');
    const random = blocks.find((b) => b.origin?.channelId === 'zulip:random');
    const generalText = textOf(general?.payload as never);
    expect(generalText).toContain('<missed channel="zulip:general" messages="2"');
    for (const id of away) expect(generalText).toContain(`id=${id}]`);
    expect(generalText).not.toContain(`id=${seen}]`);
    expect(general?.origin).toMatchObject({ kind: 'missed', missed: { wasOpen: true, messages: 2 } });
    const randomText = textOf(random?.payload as never);
    expect(randomText).toContain(`id=${mention}]`);
    expect(random?.origin).toMatchObject({ missed: { wasOpen: false } });
    // Nothing of the first run is offered again.
    expect(second.incoming.items).toEqual([]);
  });

  it('heals an event-queue expiry from history: what arrived in the gap reaches the open channel', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const before = realm.say('general', 'live before the gap');
    await s.incoming.first((m) => m.messageId === String(before));
    realm.sim.expireAllQueues();
    // Sent before the engine can register a new queue: only the healing sweep can find it.
    const lost = realm.say('general', 'sent into the gap');
    const after = await s.incoming.first((m) => m.messageId === String(lost));
    expect(after.metadata).toMatchObject({ recovered: true });
    const later = realm.say('general', 'live after the gap');
    await s.incoming.first((m) => m.messageId === String(later));
    const ids = s.incoming.items.filter((m) => !m.messageId.includes(':')).map((m) => Number(m.messageId));
    expect(ids).toEqual([before, lost, later]);
  });

  it('replays from history what the host refused, once it accepts again', async () => {
    let refusedOnce!: () => void;
    const refusal = new Promise<void>((resolve) => {
      refusedOnce = resolve;
    });
    let refuse = true;
    const s = await start({
      incoming: (messages) =>
        messages.map(() => {
          if (!refuse) return { accepted: true };
          refuse = false;
          refusedOnce();
          return { accepted: false, reason: 'busy' };
        }),
    });
    await s.host.openChannel({ channelId: 'zulip:general' });
    const id = realm.say('general', 'you were busy');
    await refusal;
    expect(s.incoming.items).toEqual([]);
    // Offered again from history after the engine's backoff.
    const replayed = await s.incoming.first((m) => m.messageId === String(id));
    expect(replayed.metadata).toMatchObject({ recovered: true });
  });
});

describe('send once', () => {
  it('refuses a publish that repeats one sent a moment ago to the same topic, naming the earlier message', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const asked = realm.say('general', 'is it deployed?', { topic: 'deploy' });
    await s.incoming.first((m) => m.messageId === String(asked));
    const published = await s.host.publish({ channelId: 'zulip:general', content: 'Deployed.' });
    await expect(s.host.publish({ channelId: 'zulip:general', content: 'Deployed.' })).rejects.toMatchObject({
      details: { rpcCode: -32602, data: { code: 'TOOLS_ALREADY_SENT', messageId: published?.messageId } },
    });
    // The send tools answer to the same memory.
    const tool = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 'deploy',
      content: 'Deployed.',
    });
    expect(tool.isError).toBe(true);
    expect(JSON.stringify(tool.content)).toContain(`as message ${published?.messageId}`);
  });
});

describe('rollback', () => {
  it('deletes what was sent after a checkpoint, tool sends and publishes alike, without change lines', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const asked = realm.say('general', 'status?', { topic: 'release' });
    await s.incoming.first((m) => m.messageId === String(asked));

    const kept = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 'release',
      content: 'checking',
    });
    const checkpoint = kept.state?.checkpoint as string;
    expect(checkpoint).toEqual(expect.any(String));
    const keptId = (kept.structuredContent as { message_id: number }).message_id;
    const published = await s.host.publish({ channelId: 'zulip:general', content: 'all good' });
    const later = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 'release',
      content: 'oops',
    });
    const laterId = (later.structuredContent as { message_id: number }).message_id;
    expect(later.state?.parent).toBe(checkpoint);

    const rolled = await s.host.rollback({ checkpoint });
    expect(rolled).toMatchObject({ checkpoint, success: true });
    expect(realm.sim.realm.message(keptId)).toBeDefined();
    expect(realm.sim.realm.message(Number(published?.messageId))).toBeUndefined();
    expect(realm.sim.realm.message(laterId)).toBeUndefined();

    // The bot's own deletions are not news to the agent: the next message arrives, no [deleted] line before it.
    const next = realm.say('general', 'thanks', { topic: 'release' });
    await s.incoming.first((m) => m.messageId === String(next));
    expect(s.incoming.items.some((m) => m.messageId.startsWith('delete:'))).toBe(false);

    await expect(s.host.rollback({ checkpoint: 'chk_unknown' })).rejects.toMatchObject({
      details: { rpcCode: -32005 },
    });
  });

  it('splits a publish longer than the realm allows into parts, posted in order and each rolled back', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const asked = realm.say('general', 'the full report, please', { topic: 'report' });
    await s.incoming.first((m) => m.messageId === String(asked));
    const kept = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 'report',
      content: 'on it',
    });
    const checkpoint = kept.state?.checkpoint as string;
    const paragraph = (n: number) => `Part ${n}: ${'x'.repeat(5_990)}`;
    const report = [1, 2, 3].map(paragraph).join('\n\n');
    const published = await s.host.publish({ channelId: 'zulip:general', content: report });
    const first = Number(published?.messageId);
    const parts = [];
    for (let id = first; id <= realm.sim.realm.maxMessageId(); id++) {
      const m = realm.sim.realm.message(id);
      if (m !== undefined && m.senderId === realm.bot && m.topic === 'report') parts.push(m);
    }
    expect(parts.map((m) => m.content.slice(0, 7))).toEqual(['Part 1:', 'Part 2:', 'Part 3:']);
    expect(parts.every((m) => [...m.content].length <= 10_000)).toBe(true);

    await s.host.rollback({ checkpoint });
    for (const part of parts) expect(realm.sim.realm.message(part.id)).toBeUndefined();
  });
});

describe('context injection', () => {
  it('injects recent history of the open channels before inference, only while zulip.context is enabled', async () => {
    realm.say('general', 'context one');
    realm.say('general', '<script>context two</script>');
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const outcome = await s.host.beforeInference({ inferenceId: 'inf-1' });
    expect(outcome.featureSet).toBe('zulip.context');
    expect(outcome.accepted).toHaveLength(1);
    const injected = outcome.accepted[0];
    expect(injected?.position).toBe('beforeUser');
    const text = String(injected?.content);
    expect(text).toMatch(/^<recent channel="zulip:general" messages="2">\n/);
    expect(text).toContain('Ann Lee: context one');
    expect(text).toContain('&lt;script>context two&lt;/script>');

    await s.host.setPolicy({ effectiveCapabilities: [...FULL_GRANT], disabled: ['zulip.context'] });
    const off = await s.host.beforeInference({ inferenceId: 'inf-2' });
    expect(off.accepted).toEqual([]);
  });
});

describe('filters plane', () => {
  it('hot-reloads the file: a mute written by the operator stops pushes, an allowlist drops a channel', async () => {
    const s = await start();
    const file = s.app.filters.view().location;
    expect(file.startsWith(realm.stateDir)).toBe(true);
    const reloaded = (revision: number) =>
      new Promise<void>((resolve) => {
        const off = s.app.filters.subscribe((event: FiltersEvent) => {
          if (event.kind === 'reloaded' && event.revision >= revision) {
            off();
            resolve();
          }
        });
      });
    const base = s.app.filters.view().revision;
    let wait = reloaded(base + 1);
    await writeFile(`${file}.tmp`, JSON.stringify({ mutedStreams: ['random'] }));
    await rename(`${file}.tmp`, file);
    await wait;
    realm.say('random', 'muted @**Helper Bot**');
    const heard = realm.say('general', 'not muted @**Helper Bot**');
    const push = await s.pushes.first(() => true);
    expect(push.eventId).toBe(`msg:${heard}`);

    wait = reloaded(base + 2);
    const removed = s.registrations.until(() => !s.host.channels.some((c) => c.id === 'zulip:random'));
    await writeFile(`${file}.tmp`, JSON.stringify({ streams: ['general'] }));
    await rename(`${file}.tmp`, file);
    await wait;
    await removed;
    expect(s.host.channels.map((c) => c.id)).toEqual(['zulip:general']);
  });
});

describe('what a message carries', () => {
  it('inlines the images of a live message, downsampled for a model', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const png = await sharp({ create: { width: 3000, height: 1500, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
    const { url } = realm.sim.realm.upload(realm.ann, 'chart.png', png, 'image/png');
    const id = realm.say('general', `the chart: [chart.png](${url})`);
    const message = await s.incoming.first((m) => m.messageId === String(id));
    expect(message.tags).toContain('chat:has-image');
    const image = message.content[1];
    expect(image?.type).toBe('image');
    const data = (image as { data: string }).data;
    const meta = await sharp(Buffer.from(data, 'base64')).metadata();
    expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBeLessThanOrEqual(1568);
  });

  it('delivers bare bodies with no attribution stamp when ZULIP_ATTRIBUTE_DELIVERY is off', async () => {
    const s = await start({ env: { ZULIP_ATTRIBUTE_DELIVERY: 'false' } });
    await s.host.openChannel({ channelId: 'zulip:general' });
    const id = realm.say('general', 'just the body');
    const message = await s.incoming.first((m) => m.messageId === String(id));
    expect(textOf(message)).toBe('just the body');
    expect(message.metadata?.attributed).toBeUndefined();
  });

  it('stops delivery at once when zulip.messaging is disabled, and resumes without loss when it is enabled again', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    await s.host.setPolicy({ effectiveCapabilities: [...FULL_GRANT], disabled: ['zulip.messaging'] });
    const held = realm.say('general', 'while disabled');
    await expect(
      s.host.callTool('send_message', { stream: 'general', topic: 'x', content: 'no' }),
    ).rejects.toMatchObject({
      details: { rpcCode: -32001 },
    });
    expect(s.incoming.items).toEqual([]);
    await s.host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    const message = await s.incoming.first((m) => m.messageId === String(held));
    expect(textOf(message)).toContain('while disabled');
  });
});

describe('concurrency', () => {
  it('answers other requests while one waits on a hung Zulip call, and the hung one ends at its deadline', async () => {
    const s = await start({ env: { ZULIP_TOOL_DEADLINE_MS: '2000' } });
    const fault = realm.sim.faults.add({ method: 'GET', path: '/messages', latencyMs: 60_000 });
    let hungSettled = false;
    const hung = s.host.callTool('fetch_history', { stream: 'general' }).finally(() => {
      hungSettled = true;
    });
    const quick = await s.host.callTool('list_streams', {});
    expect(quick.isError).not.toBe(true);
    expect(hungSettled).toBe(false);
    const late = await hung;
    expect(late.isError).toBe(true);
    expect(late._meta).toMatchObject({ 'zmcp/error': { code: 'TOOLS_DEADLINE' } });
    fault.remove();
  });
});
