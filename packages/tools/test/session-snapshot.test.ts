// An agent session carried across processes: what one process left (its snapshot), another takes
// on, and the conversation carries on where it was, nothing handed over twice.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentSessionSnapshotSchema, sameConversation } from '../src/session/agent-session.js';
import { type Harness, startHarness } from './harness.js';
import { closeSessions, fails, ok, sessionRig } from './session-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await closeSessions();
});
afterAll(async () => {
  await h.close();
});

describe('AgentSession snapshot and restore', () => {
  it('lets a second session take over the conversation, the read position with it', async () => {
    const first = sessionRig(h);
    const trigger = h.post(h.realm.ann, 'general', 'snap-a', '@**Helper Bot** help');
    ok(
      first,
      'set_context',
      await first.call('set_context', { stream: 'general', topic: 'snap-a', trigger_message_id: trigger }),
    );
    const stored = JSON.parse(JSON.stringify(first.session.snapshot()));
    expect(AgentSessionSnapshotSchema.parse(stored)).toEqual(stored);
    expect(stored).toMatchObject({
      binding: { topic: 'snap-a', triggerMessageId: trigger },
      lastSeenId: trigger,
    });

    // Another process: a fresh session, the snapshot restored, then what arrived meanwhile.
    const second = sessionRig(h);
    fails(await second.call('reply', { content: 'nothing bound yet' }), 'TOOLS_NO_SESSION');
    second.session.restore(stored);
    const later = h.post(h.realm.bo, 'general', 'snap-a', 'more detail');
    const { structured } = ok(second, 'reply', await second.call('reply', { content: 'on it' }));
    expect(structured.arrived_ids).toEqual([later]);

    // Back on the first: restoring the second's snapshot moves it forward, never back.
    first.session.restore(second.session.snapshot());
    expect(first.session.state().lastSeenId).toBe(second.session.state().lastSeenId);
    first.session.restore(stored);
    expect(first.session.state().lastSeenId).toBe(second.session.state().lastSeenId);
  });

  it('takes a snapshot bound elsewhere as it is, and an ended session stays ended', async () => {
    const rig = sessionRig(h);
    const a = h.post(h.realm.ann, 'general', 'snap-b', '@**Helper Bot** one');
    ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'snap-b', trigger_message_id: a }),
    );
    const snapB = rig.session.snapshot();
    const other = sessionRig(h);
    const c = h.post(h.realm.ann, 'general', 'snap-c', '@**Helper Bot** two');
    ok(
      other,
      'set_context',
      await other.call('set_context', { stream: 'general', topic: 'snap-c', trigger_message_id: c }),
    );
    expect(sameConversation(snapB.binding, other.session.snapshot().binding)).toBe(false);
    other.session.restore(snapB);
    expect(other.session.state()).toMatchObject({ topic: 'snap-b', lastSeenId: a });
    const ended = {
      ...snapB,
      binding: null,
      ended: {
        reason: 'nobots' as const,
        stream: 'general',
        topic: 'snap-b',
        byUserId: null,
        byName: null,
        messageId: null,
      },
    };
    other.session.restore(ended);
    fails(await other.call('reply', { content: 'x' }), 'TOOLS_SESSION_ENDED');
  });
});
