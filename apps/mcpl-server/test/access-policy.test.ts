// Host methods and the access policy the tools obey (ZULIP_WRITE_STREAMS, ZULIP_PRIVATE_STREAMS):
// every write a host method makes goes through core's write check (typing, acknowledgement, the
// subscription channels/open makes, the deletions of a rollback), and a stream the policy keeps
// closed is not told apart from one that does not exist. A test host from @zmcp/mcpl's host role
// drives zulip-mcpl against zulip-sim.
import type { StandardSchemaV1 } from '@modelcontextprotocol/server';
import type { McplHost } from '@zmcp/mcpl';
import { describe, expect, it } from 'vitest';
import { type Realm, realmPerTest } from './world.js';

let realm: Realm;
const { start } = realmPerTest((r) => {
  realm = r;
});

/** Any result, as it came: the test reads the server's answer itself. */
const anyResult: StandardSchemaV1<unknown> = {
  '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) },
};

/** `channels/typing` in its Request form, so the test reads the server's answer. */
function typingRequest(host: McplHost, channelId: string): Promise<unknown> {
  return host.client.request({ method: 'channels/typing', params: { channelId } }, anyResult);
}

/** The writes zulip-sim was asked for (anything but a GET), by path. */
function writes(realmOf: Realm): string[] {
  return realmOf.sim.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`);
}

const NOT_PERMITTED = { details: { rpcCode: -32017 } };

describe('the write policy on host methods (ZULIP_WRITE_STREAMS)', () => {
  it('refuses typing, acknowledgement and the subscription of channels/open outside it, as add_reaction is refused', async () => {
    const s = await start({ env: { ZULIP_WRITE_STREAMS: 'general' } });
    // Reading random is allowed: its channel opens (the bot is subscribed, nothing is written).
    await s.host.openChannel({ channelId: 'zulip:random' });
    const asked = realm.say('random', 'anyone?');
    await s.incoming.first((m) => m.messageId === String(asked));
    const before = writes(realm).length;

    // The tool refuses to react there ...
    const tool = await s.host.callTool('add_reaction', { message_id: asked, emoji: 'eyes' });
    expect(tool.isError).toBe(true);
    // ... and so does every host method that writes.
    await expect(
      s.host.acknowledge({ channelId: 'zulip:random', messageId: String(asked), intent: 'seen' }),
    ).rejects.toMatchObject(NOT_PERMITTED);
    await expect(typingRequest(s.host, 'zulip:random')).rejects.toMatchObject({ code: -32017 });
    // lobby is public and readable, but joining it is a write in it.
    await expect(s.host.openChannel({ channelId: 'zulip:lobby' })).rejects.toMatchObject(NOT_PERMITTED);

    expect(writes(realm).slice(before)).toEqual([]);
    expect(realm.sim.realm.message(asked)?.reactions ?? []).toEqual([]);
    expect(realm.sim.realm.stream('lobby')?.subscribers).not.toContain(realm.bot);

    // Inside the allowlist the same methods write.
    await s.host.openChannel({ channelId: 'zulip:general' });
    const there = realm.say('general', 'here?');
    await s.incoming.first((m) => m.messageId === String(there));
    await typingRequest(s.host, 'zulip:general');
    await expect(
      s.host.acknowledge({ channelId: 'zulip:general', messageId: String(there), intent: 'seen' }),
    ).resolves.toMatchObject({ acknowledged: true });
    expect(writes(realm).slice(before)).toEqual([
      'POST /api/v1/typing',
      `POST /api/v1/messages/${there}/reactions`,
    ]);
  });

  it('refuses typing and acknowledgement in a DM when the allowlist leaves DMs out, as send_dm is refused', async () => {
    const s = await start({ env: { ZULIP_WRITE_STREAMS: 'general' } });
    const dm = realm.dm('psst');
    const channelId = `zulip:dm:${realm.ann}`;
    await s.pushes.first((e) => e.eventId === `msg:${dm}`);
    await s.registrations.until(() => s.host.channels.some((c) => c.id === channelId));
    const before = writes(realm).length;

    const tool = await s.host.callTool('send_dm', { to: [realm.ann], content: 'hello' });
    expect(tool.isError).toBe(true);
    await expect(
      s.host.acknowledge({ channelId, messageId: String(dm), intent: 'seen' }),
    ).rejects.toMatchObject(NOT_PERMITTED);
    await expect(typingRequest(s.host, channelId)).rejects.toMatchObject({ code: -32017 });
    expect(writes(realm).slice(before)).toEqual([]);
  });
});

describe('rollback and the write policy', () => {
  it('judges each message where it is now: one a person moved outside ZULIP_WRITE_STREAMS stays, the rest go', async () => {
    const s = await start({ env: { ZULIP_WRITE_STREAMS: 'general' } });
    const send = async (content: string) => {
      const result = await s.host.callTool('send_message', { stream: 'general', topic: 'release', content });
      return { id: (result.structuredContent as { message_id: number }).message_id, result };
    };
    const kept = await send('checking');
    const checkpoint = kept.result.state?.checkpoint as string;
    const first = await send('first');
    const second = await send('second');
    // A person moves the bot's newest message to a stream the bot may not write to.
    realm.sim.realm.editMessage(realm.ann, second.id, {
      streamId: realm.streams.random,
      propagateMode: 'change_one',
    });

    const rolled = await s.host.rollback({ checkpoint });
    expect(rolled).toMatchObject({ checkpoint, success: false });
    expect(rolled.reason).toContain('ZULIP_WRITE_STREAMS');
    expect(realm.sim.realm.message(second.id)).toMatchObject({ streamId: realm.streams.random });
    expect(realm.sim.realm.message(first.id)).toBeUndefined();
    expect(realm.sim.realm.message(kept.id)).toBeDefined();
    expect(writes(realm).filter((w) => w.startsWith('DELETE /api/v1/messages'))).toEqual([
      `DELETE /api/v1/messages/${first.id}`,
    ]);
  });

  it('rolls back a DM the bot sent even when DMs are not readable (a DM never moves)', async () => {
    const s = await start({ env: { ZULIP_PRIVATE_STREAMS: '' } });
    const first = await s.host.callTool('send_message', { stream: 'general', topic: 't', content: 'mark' });
    const checkpoint = first.state?.checkpoint as string;
    const dm = await s.host.callTool('send_dm', { to: [realm.ann], content: 'hello' });
    const dmId = (dm.structuredContent as { message_id: number }).message_id;
    expect(realm.sim.realm.message(dmId)).toBeDefined();
    expect(await s.host.rollback({ checkpoint })).toMatchObject({ success: true });
    expect(realm.sim.realm.message(dmId)).toBeUndefined();
  });
});

describe('channels/open and the read policy (ZULIP_PRIVATE_STREAMS)', () => {
  it('answers a private stream the policy keeps closed exactly as a stream that does not exist', async () => {
    const vault = realm.sim.realm.addStream({
      name: 'vault',
      inviteOnly: true,
      subscribers: [realm.bot, realm.ann],
    }).streamId;
    const s = await start({ env: { ZULIP_PRIVATE_STREAMS: '' } });
    expect(s.host.channels.map((c) => c.id)).not.toContain('zulip:vault');
    const refusal = async (target: Parameters<McplHost['openChannel']>[0]) => {
      const err = await s.host.openChannel(target).then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
      );
      expect(err).toBeDefined();
      return { code: err?.code, message: err?.message, details: err?.details };
    };
    const before = writes(realm).length;

    // By name: the same code, message and data, but for the name the host gave.
    const closed = await refusal({ channelId: 'zulip:vault' });
    const missing = await refusal({ channelId: 'zulip:vaulx' });
    expect(closed.details?.rpcCode).toBe(-32023);
    expect(JSON.stringify(closed).replaceAll('vault', 'NAME')).toBe(
      JSON.stringify(missing).replaceAll('vaulx', 'NAME'),
    );
    // By address: nothing differs at all.
    const closedById = await refusal({ type: 'zulip', address: { streamId: vault } });
    const missingById = await refusal({ type: 'zulip', address: { streamId: 987654 } });
    expect(closedById.details?.rpcCode).toBe(-32023);
    expect(closedById).toEqual(missingById);
    // An id that names no channel at all is unknown too.
    expect((await refusal({ channelId: 'zulip:a:b' })).details?.rpcCode).toBe(-32023);

    expect(writes(realm).slice(before)).toEqual([]);
    expect(realm.sim.realm.streams().map((st) => st.name)).not.toContain('vaulx');
  });
});
