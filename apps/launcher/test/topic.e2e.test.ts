// The session follows the topic: a rename carries the agent's conversation (a mention under the new
// name is a follow-up, not a second agent), and resolving the topic ends the session as a
// dismissal does; resolving it is not the gate's to skip: someone outside it changes nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startWorld, type World } from './world.js';

let w: World;

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  await w.close();
});

describe('the session follows the topic', () => {
  it('follows a rename, takes a mention there as a follow-up, and ends when an admitted person resolves it', async () => {
    await w.launch({ progress: false });
    const listening = w.nextListen('outage');
    const trigger = w.mention(w.ann, 'outage');
    await listening;
    // Renamed: the agent's listen reports the move and listens under the new name.
    const relistening = w.nextListen('outage in eu');
    w.sim.realm.editMessage(w.cy.userId, trigger, { topic: 'outage in eu', propagateMode: 'change_all' });
    await relistening;
    const answered = w.nextRequest(
      (r) =>
        r.method === 'POST' &&
        r.path.endsWith('/messages') &&
        r.userId === w.bot.userId &&
        r.params.topic === 'outage in eu' &&
        /read|interrupt/.test(String(r.params.content)),
    );
    const followUp = w.mention(w.ann, 'outage in eu', 'any news?');
    const e = await w.event('trigger', (ev) => ev.trigger.messageId === followUp);
    expect(e.action).toBe('followup');
    expect(String((await answered).params.content)).toContain(String(followUp));
    // Bo is outside the gate: his resolution moves the topic, and the session follows, no more.
    const stillListening = w.nextListen('✔ outage in eu');
    w.sim.realm.editMessage(w.bo.userId, trigger, { topic: '✔ outage in eu', propagateMode: 'change_all' });
    await stillListening;
    w.sim.realm.editMessage(w.bo.userId, trigger, { topic: 'outage in eu', propagateMode: 'change_all' });
    await w.nextListen('outage in eu');
    // Ann resolves it: the session ends as a dismissal does, and the trigger is marked done.
    const checked = w.nextRequest(
      (r) =>
        r.method === 'POST' &&
        r.path.endsWith(`/messages/${trigger}/reactions`) &&
        r.userId === w.bot.userId &&
        r.params.emoji_name === 'check',
    );
    w.sim.realm.editMessage(w.ann.userId, trigger, { topic: '✔ outage in eu', propagateMode: 'change_all' });
    const end = await w.ended(trigger);
    expect(end.outcome).toBe('done');
    expect(end.trigger.topic).toBe('✔ outage in eu');
    await checked;
    expect(w.reactions(trigger)).toContain('check');
    expect(w.events.filter((ev) => ev.type === 'started')).toHaveLength(1);
    const steps = w.records()[0]?.events.map((ev) => ev.step) ?? [];
    expect(steps.at(-1)).toBe('end_session');
  });
});
