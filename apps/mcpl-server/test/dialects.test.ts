// The 0.4 hosts INTEROP.md records, played by @zmcp/mcpl's host role in their dialects:
// mcpl-harness 0.1.1 and agent-framework 0.1.0. Neither sends a policy; both hold the grant
// the server assumes for them at initialized.
import type { ChannelDescriptor, McplSession } from '@zmcp/mcpl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Realm, type Served, serve, startRealm, textOf } from './world.js';

let realm: Realm;
let served: Served | undefined;

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  await served?.close();
  served = undefined;
  await realm.close();
});

const ids = (channels: readonly ChannelDescriptor[]) => channels.map((c) => c.id).sort();

describe('mcpl-harness 0.1.1 (0.4, never sends a policy; it greets as mcpl-harness-web 0.1.0)', () => {
  it('gets array-form feature sets, the assumed grant at initialized, pending channels after {}, and delivery', async () => {
    served = await serve(realm, {
      host: { name: 'mcpl-harness-web', version: '0.1.0', dialect: 'mcpl-harness' },
      grant: null,
    });
    const { app, host, session } = served;
    const featureSets = host.manifest?.featureSets as { name: string }[];
    expect(Array.isArray(featureSets)).toBe(true);
    expect(featureSets.map((f) => f.name).sort()).toEqual([
      'zulip.context',
      'zulip.history',
      'zulip.messaging',
    ]);
    expect(session.policySource).toBe('legacy');
    expect(host.policyEstablished).toBe(true);
    expect(host.isGranted('channels.lifecycle')).toBe(true);
    // Its greeting advertises no context hooks: messaging and history, no context injection.
    expect(session.featureSets.filter((f) => f.enabled).map((f) => f.name)).toEqual([
      'zulip.messaging',
      'zulip.history',
    ]);
    // Its channels/list right after the handshake was answered, not refused for want of a policy.
    expect(host.handshakeChannels).toBeInstanceOf(Array);
    await app.connection(session)?.started;
    await served.registrations.until((n) => n.length > 0);
    expect(ids(host.channels)).toEqual(['zulip:general', 'zulip:random']);
    // {} itemizes nothing: the channels stay usable, listed and openable.
    expect(ids(await host.listChannels())).toEqual(['zulip:general', 'zulip:random']);
    const opened = await host.openChannel({ channelId: 'zulip:general' });
    expect(opened.channel.id).toBe('zulip:general');

    realm.say('general', 'harness hears this');
    const heard = await served.incoming.first((m) => textOf(m).includes('harness hears this'));
    expect(heard.channelId).toBe('zulip:general');
    const mention = realm.say('random', 'hi @**Helper Bot**');
    const push = await served.pushes.first((e) => e.eventId === `msg:${mention}`);
    expect(push.featureSet).toBe('zulip.messaging');
    // Tools work without a policy; a method 0.5 removed is still answered.
    expect((await host.callTool('list_streams')).isError).not.toBe(true);
    expect(await host.afterInference({ inferenceId: 'x' })).toEqual({});
  });
});

describe('agent-framework 0.1.0 (0.4)', () => {
  it('greets as it really does (no channels member) and still gets channels, incoming, typing and a publish', async () => {
    // The host role's agent-framework dialect writes agent-framework 0.1.0's recorded handshake
    // byte for byte (@zmcp/mcpl's test/fixtures/peers).
    served = await serve(realm, {
      host: { name: 'agent-framework', version: '1.0.0', dialect: 'agent-framework' },
      grant: null,
    });
    const { app, host, session } = served;
    expect(session.dialect).toMatchObject({ name: 'agent-framework', version: '0.4', legacy: true });
    expect(session.sdk.getClientCapabilities()?.experimental?.mcpl).not.toHaveProperty('channels');
    // An operator enables the sets it wants; agent-framework says so in a Notification.
    await host.notifyPolicy({ enabled: ['zulip.messaging', 'zulip.history'], disabled: ['zulip.context'] });
    await app.connection(session)?.started;
    expect(session.isFeatureSetEnabled('zulip.messaging')).toBe(true);
    await opened(session, ['zulip:general', 'zulip:random']);

    const asked = realm.say('general', 'is the build green?', { topic: 'ci' });
    const heard = await served.incoming.first((m) => m.messageId === String(asked));
    expect(heard).toMatchObject({ channelId: 'zulip:general', threadId: 'ci' });

    // It keeps typing alive with a bare {channelId} Notification, then publishes as a Request.
    const typed = new Promise<Record<string, unknown>>((resolve) => {
      const off = realm.sim.onRequest((r) => {
        if (r.path.endsWith('/typing')) {
          off();
          resolve(r.params);
        }
      });
    });
    await host.typing({ channelId: 'zulip:general' });
    expect(await typed).toMatchObject({ op: 'start', type: 'stream', topic: 'ci' });
    const published = await host.publish({ channelId: 'zulip:general', content: 'yes, all green' });
    expect(published?.delivered).toBe(true);
    expect(realm.sim.realm.message(Number(published?.messageId))).toMatchObject({
      topic: 'ci',
      senderId: realm.bot,
      content: 'yes, all green',
    });
    // The sending tools are served, under zulip.messaging.
    expect((await host.listTools()).map((t) => t.name)).toContain('send_message');
  });

  it('reads {registered}, takes a Notification policy, auto-opens by address and counts a duplicate as delivered', async () => {
    const pushed: string[] = [];
    let firstPush: () => void = () => undefined;
    const pushedOnce = new Promise<void>((resolve) => {
      firstPush = resolve;
    });
    served = await serve(realm, {
      host: { name: 'agent-framework', version: '1.0.0', dialect: 'agent-framework' },
      grant: null,
      // agent-framework answers a push it has seen with a refusal-shaped result.
      pushEvent: (event) => {
        pushed.push(event.eventId);
        firstPush();
        return { accepted: false, reason: 'duplicate' };
      },
    });
    const { app, host, session } = served;
    expect(Array.isArray(host.manifest?.featureSets)).toBe(false);
    expect(session.policySource).toBe('legacy');
    await host.notifyPolicy({ disabled: ['zulip.context'] });
    await app.connection(session)?.started;
    // It auto-opens every registered channel, by {type, address}, with nothing asked of it.
    await opened(session, ['zulip:general', 'zulip:random']);
    expect(ids(host.channels)).toEqual(['zulip:general', 'zulip:random']);

    // A first DM announces its channel; the host opens that too, and the DM arrives on it.
    const dm = realm.dm('are you there?');
    const heard = await served.incoming.first((m) => m.messageId === String(dm));
    expect(heard.channelId).toBe(`zulip:dm:${realm.ann}`);
    expect(session.isChannelOpen(`zulip:dm:${realm.ann}`)).toBe(true);

    // A mention on a channel it closed is pushed; the duplicate-shaped answer counts as delivered.
    await host.closeChannel('zulip:random');
    const mention = realm.say('random', 'hi @**Helper Bot**');
    await pushedOnce;
    await served.settled('zulip:random');
    const next = realm.say('general', 'and now the stream');
    await served.incoming.first((m) => m.messageId === String(next));
    expect(pushed).toEqual([`msg:${mention}`]);
    // Delivered: the channel's watermark moved past it, so it is never offered again.
    const random = app
      .connection(session)
      ?.engine.channels()
      .find((c) => c.channel.id === 'zulip:random');
    expect(random?.watermark).toBe(mention);
    expect(served.incoming.items.map((m) => m.messageId)).not.toContain(String(mention));
    // The Notification narrowed the assumed grant: no context is injected.
    expect((await host.beforeInference({ inferenceId: 'i', userMessage: null })).accepted).toEqual([]);
  });
});

/** Resolves once the server counts every one of `channelIds` open. */
function opened(session: McplSession, channelIds: readonly string[]): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!channelIds.every((id) => session.isChannelOpen(id))) return;
      off();
      resolve();
    };
    const off = session.on('channelOpened', check);
    check();
  });
}
