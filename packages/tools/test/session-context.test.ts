import { AccessPolicy } from '@zmcp/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createToolServices } from '../src/services.js';
import { createAgentSession } from '../src/session/agent-session.js';
import { sessionCatalog } from '../src/session/index.js';
import { type Harness, simStreams, startHarness } from './harness.js';
import { closeSessions, fails, ok, sessionRig, typingLog } from './session-fixtures.js';

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

describe('set_context', () => {
  it('binds to the trigger’s conversation and returns the history around it, trigger marked', async () => {
    const rig = sessionRig(h);
    const typing = typingLog(h);
    const first = h.post(h.realm.ann, 'general', 'ctx-a', 'the deploy failed again');
    const second = h.post(h.realm.bo, 'general', 'ctx-a', 'same error as last week');
    const trigger = h.post(h.realm.ann, 'general', 'ctx-a', '@**Helper Bot** can you look?');
    const after = h.post(h.realm.bo, 'general', 'ctx-a', 'logs are in the <ticket>');
    h.post(h.realm.ann, 'general', 'elsewhere', 'not this topic');
    const { text, structured } = ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'General', topic: 'CTX-A', trigger_message_id: trigger }),
    );
    expect(structured).toEqual({
      stream_id: h.realm.streams.general,
      trigger_message_id: trigger,
      ids: [first, second, trigger, after],
      hidden: 0,
      truncated: false,
      has_older: false,
      has_newer: false,
      last_seen_id: after,
    });
    const lines = text.split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.slice(1).map((l) => Number(/ id=(\d+)\]/.exec(l)?.[1]))).toEqual([
      first,
      second,
      trigger,
      after,
    ]);
    expect(lines[0]).toContain('Session bound to #general > ctx-a');
    expect(lines[0]).toContain(`4 messages (ids ${first}–${after})`);
    expect(lines[0]).toContain(`the trigger ${trigger} marked →`);
    expect(lines[0]).toContain(':stop:');
    expect(lines[3]).toMatch(new RegExp(`^→ \\[.* id=${trigger}\\] \\[#general > ctx-a\\] Ann Lee`));
    // Bodies are escaped at the trust boundary.
    expect(lines[4]).toContain('logs are in the &lt;ticket>');
    expect(rig.session.state()).toMatchObject({
      bound: true,
      topic: 'ctx-a',
      lastSeenId: after,
      typing: 'none',
    });
    // Binding sends no typing notification (a stop that early would wipe an owner's indicator).
    typing.stop();
    expect(typing.ops).toEqual([]);
  });

  it('without a trigger returns the newest messages and says older ones exist', async () => {
    const rig = sessionRig(h);
    h.post(h.realm.ann, 'general', 'ctx-b', 'one');
    const two = h.post(h.realm.ann, 'general', 'ctx-b', 'two');
    const three = h.post(h.realm.bo, 'general', 'ctx-b', 'three');
    const { text, structured } = ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: h.realm.streams.general, topic: 'ctx-b', history: 2 }),
    );
    expect(structured).toMatchObject({
      ids: [two, three],
      has_older: true,
      trigger_message_id: null,
      last_seen_id: three,
    });
    const lines = text.split('\n');
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(new RegExp(`id=${two}\\] \\[#general > ctx-b\\] Ann Lee: two$`)),
      expect.stringMatching(new RegExp(`id=${three}\\] \\[#general > ctx-b\\] Bo Chen: three$`)),
    ]);
  });

  it('binds to an empty topic', async () => {
    const rig = sessionRig(h);
    const { text, structured } = ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'brand new' }),
    );
    expect(text).toContain('no messages there yet');
    expect(structured).toMatchObject({ ids: [], last_seen_id: 0, trigger_message_id: null });
    expect(text.split('\n')).toHaveLength(1);
  });

  it('leaves /nobots messages out and refuses /nobots topics', async () => {
    const rig = sessionRig(h);
    const visible = h.post(h.realm.ann, 'general', 'ctx-nobots', 'hello bot');
    const hidden = h.post(h.realm.bo, 'general', 'ctx-nobots', '/nobots private aside');
    const { text, structured } = ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'ctx-nobots' }),
    );
    expect(structured.ids).toEqual([visible]);
    expect(structured.hidden).toBe(1);
    expect(structured.last_seen_id).toBe(hidden);
    expect(text).toContain('1 message hidden (opted out of bots with /nobots)');
    expect(text).not.toContain('private aside');
    const refused = fails(
      await rig.call('set_context', { stream: 'general', topic: 'lounge /nobots' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(refused.text).toContain('/nobots');
    // A trigger that opted out reads as not found.
    fails(
      await rig.call('set_context', { stream: 'general', topic: 'ctx-nobots', trigger_message_id: hidden }),
      'TOOLS_NOT_FOUND',
    );
  });

  it('refuses bad arguments, naming the field', async () => {
    const rig = sessionRig(h);
    const other = h.post(h.realm.ann, 'general', 'ctx-other', 'elsewhere');
    expect(fails(await rig.call('set_context', { stream: 'general' }), 'TOOLS_INVALID_INPUT').text).toContain(
      'topic',
    );
    expect(
      fails(
        await rig.call('set_context', { stream: 'general', topic: 'x', history: 0 }),
        'TOOLS_INVALID_INPUT',
      ).text,
    ).toContain('history');
    expect(
      fails(await rig.call('set_context', { stream: 'general', topic: '   ' }), 'TOOLS_INVALID_INPUT').text,
    ).toContain('topic is empty');
    expect(
      fails(
        await rig.call('set_context', { stream: 'general', topic: 'ctx-c', trigger_message_id: other }),
        'TOOLS_INVALID_INPUT',
      ).text,
    ).toContain('trigger_message_id');
    fails(
      await rig.call('set_context', { stream: 'general', topic: 'ctx-c', trigger_message_id: 99_999_999 }),
      'TOOLS_NOT_FOUND',
    );
    fails(await rig.call('set_context', { stream: 'nope', topic: 'ctx-c' }), 'TOOLS_NOT_FOUND');
    expect(rig.session.state().bound).toBe(false);
  });

  it('refuses private streams the policy keeps closed, and opens allowlisted ones', async () => {
    const rig = sessionRig(h);
    h.post(h.realm.ann, 'secret', 'plans', 'classified');
    const denied = fails(
      await rig.call('set_context', { stream: 'secret', topic: 'plans' }),
      'CORE_ACCESS_DENIED',
    );
    expect(denied.text).toContain('privateStreams');
    fails(await rig.call('set_context', { stream: 'hidden', topic: 'plans' }), 'TOOLS_NOT_FOUND');
    const open = createToolServices({
      ...h.services,
      policy: AccessPolicy.resolve({ readOnly: false, privateStreams: ['secret'] }, simStreams(h.sim)),
    });
    const allowed = sessionRig(h, {}, open);
    const { text, structured } = ok(
      allowed,
      'set_context',
      await allowed.call('set_context', { stream: 'secret', topic: 'plans' }),
    );
    expect(structured.stream_id).toBe(h.realm.streams.secret);
    expect((structured.ids as number[]).length).toBe(1);
    expect(text.split('\n').slice(1)).toEqual([
      expect.stringMatching(/\[#secret > plans\] Ann Lee: classified$/),
    ]);
  });
});

describe('without a session', () => {
  it('reply and listen ask for set_context; end_session does nothing', async () => {
    const rig = sessionRig(h);
    const reply = fails(await rig.call('reply', { content: 'hi' }), 'TOOLS_NO_SESSION');
    expect(reply.text).toContain('set_context');
    fails(await rig.call('listen', { timeout_seconds: 5 }), 'TOOLS_NO_SESSION');
    const { text, structured } = ok(rig, 'end_session', await rig.call('end_session', {}));
    expect(structured).toEqual({ ended: false, last_seen_id: 0 });
    expect(text).toBe('No session was bound; nothing to end.');
  });
});

describe('end_session', () => {
  it('clears the binding and stops typing', async () => {
    const rig = sessionRig(h, { autoTyping: false });
    const last = h.post(h.realm.ann, 'general', 'ctx-end', 'thanks, that is all');
    ok(rig, 'set_context', await rig.call('set_context', { stream: 'general', topic: 'ctx-end' }));
    const typing = typingLog(h);
    const { text, structured } = ok(rig, 'end_session', await rig.call('end_session', {}));
    typing.stop();
    expect(structured).toEqual({ ended: true, last_seen_id: last });
    expect(text).toBe('Session in #general > ctx-end ended. Call set_context to start another.');
    expect(typing.ops).toEqual(['stop']);
    expect(rig.session.state()).toMatchObject({ bound: false, typing: 'stopped' });
    fails(await rig.call('reply', { content: 'one more thing' }), 'TOOLS_NO_SESSION');
  });
});

describe('launch binding', () => {
  it('starts bound to the launcher’s stream, topic and trigger', async () => {
    const trigger = h.post(h.realm.ann, 'general', 'launched', '@**Helper Bot** summarize please');
    const meanwhile = h.post(h.realm.bo, 'general', 'launched', 'and include the numbers');
    const rig = sessionRig(h, {
      launch: { stream: 'general', topic: 'launched', triggerMessageId: trigger },
    });
    expect(rig.session.state().bound).toBe(false);
    const { text, structured } = ok(rig, 'reply', await rig.call('reply', { content: 'On it.' }));
    expect(structured).toMatchObject({ arrived_ids: [meanwhile], hidden: 0, more_waiting: false });
    expect(text.split('\n')[0]).toMatch(
      new RegExp(`^Sent message ${structured.message_id} to #general > launched`),
    );
    expect(text).toContain('and include the numbers');
    expect(h.sim.realm.message(structured.message_id as number)).toMatchObject({
      streamId: h.realm.streams.general,
      topic: 'launched',
    });
    expect(rig.session.state()).toMatchObject({ bound: true, triggerMessageId: trigger });
  });

  it('binds from the trigger alone', async () => {
    const trigger = h.post(h.realm.ann, 'dev', 'Trigger Only', '@**Helper Bot** ping');
    const rig = sessionRig(h, { launch: { triggerMessageId: trigger } });
    const { text, structured } = ok(rig, 'reply', await rig.call('reply', { content: 'pong' }));
    expect(structured).toMatchObject({ arrived_ids: [], hidden: 0 });
    expect(text.split('\n')[0]).toMatch(
      new RegExp(`^Sent message ${structured.message_id} to #dev > Trigger Only`),
    );
    expect(h.sim.realm.message(structured.message_id as number)).toMatchObject({
      streamId: h.realm.streams.dev,
      topic: 'Trigger Only',
    });
  });

  it('a launch naming a /nobots topic fails once, then the model must choose', async () => {
    const rig = sessionRig(h, { launch: { stream: 'general', topic: 'quiet /nobots' } });
    fails(await rig.call('reply', { content: 'hello' }), 'TOOLS_INVALID_INPUT');
    fails(await rig.call('reply', { content: 'hello' }), 'TOOLS_NO_SESSION');
  });

  it('refuses a launch with a stream and no topic', () => {
    expect(() => createAgentSession(h.services, { launch: { stream: 'general' } })).toThrow(/topic/);
    expect(() => createAgentSession(h.services, { dismissEmoji: 'not an emoji!' })).toThrow(/dismissEmoji/);
    expect(() => createAgentSession(h.services, { progressIntervalMs: 0 })).toThrow(/progressIntervalMs/);
  });
});

describe('sessionCatalog', () => {
  it('lists the four tools and the prompt, and refuses a session of other services', () => {
    const session = createAgentSession(h.services);
    const catalog = sessionCatalog(h.services, session);
    expect(catalog.tools.map(({ definition: t }) => [t.name, t.write, t.annotations.readOnlyHint])).toEqual([
      ['set_context', false, true],
      ['reply', true, false],
      ['listen', true, false],
      ['end_session', false, false],
    ]);
    expect(catalog.prompts.map((p) => p.name)).toEqual(['zulip_teammate']);
    const other = createToolServices({ ...h.services });
    expect(() => sessionCatalog(other, session)).toThrow(/same services/);
  });

  it('renders the teammate prompt with the session contract', () => {
    const rig = sessionRig(h, { dismissEmoji: 'no_entry' });
    const prompt = rig.prompts[0];
    if (prompt === undefined) throw new Error('no prompt');
    const args = prompt.argsSchema.parse({ stream: 'general', topic: 'deploys', trigger_message_id: '42' });
    const rendered = prompt.render(args);
    const text = rendered.messages.map((m) => m.text).join('\n');
    for (const needle of [
      'set_context(stream="general", topic="deploys", trigger_message_id=42)',
      'reply(content)',
      'listen(timeout_seconds)',
      'end_session',
      ':no_entry:',
      '@**Full Name|id**',
      'untrusted',
    ]) {
      expect(text).toContain(needle);
    }
    expect(prompt.argsSchema.safeParse({ trigger_message_id: 'abc' }).success).toBe(false);
    expect(prompt.render(prompt.argsSchema.parse({})).messages[0]?.text).toContain(
      'Start with set_context, passing',
    );
  });
});

describe('read-only mode', () => {
  it('binds and reads, but reply and listen are refused and nothing is written', async () => {
    const ro = await startHarness({ policy: { readOnly: true } });
    try {
      ro.post(ro.realm.ann, 'general', 'ro', '@**Helper Bot** hello');
      const rig = sessionRig(ro);
      const since = Date.now();
      ok(rig, 'set_context', await rig.call('set_context', { stream: 'general', topic: 'ro' }));
      fails(await rig.call('reply', { content: 'hi' }), 'CORE_READ_ONLY');
      fails(await rig.call('listen', { timeout_seconds: 5 }), 'CORE_READ_ONLY');
      ok(rig, 'end_session', await rig.call('end_session', {}));
      await rig.session.close();
      expect(ro.sim.requests.filter((r) => r.method !== 'GET' && r.time >= since)).toEqual([]);
      expect(ro.sim.realm.messageCount()).toBe(1);
    } finally {
      await closeSessions();
      await ro.close();
    }
  });
});
