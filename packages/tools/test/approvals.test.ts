import { AdmissionGate } from '@zmcp/core';
import type { SimRequestRecord } from '@zmcp/zulip-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalDesk, type ApprovalDeskOptions } from '../src/approvals/desk.js';
import { permissionPromptTools } from '../src/approvals/index.js';
import { createAgentSession } from '../src/session/agent-session.js';
import { callThrough, testHost } from './call.js';
import { type Harness, startHarness } from './harness.js';
import { until } from './session-fixtures.js';

let h: Harness;
const desks: ApprovalDesk[] = [];

beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  for (const desk of desks.splice(0)) await desk.close();
});
afterAll(async () => {
  await h.close();
});

function gate(): AdmissionGate {
  return new AdmissionGate({ ids: [h.realm.ann.userId], emails: [] }, { setting: 'TEST_USERS' });
}

function desk(options: Partial<ApprovalDeskOptions> = {}): ApprovalDesk {
  const d = new ApprovalDesk(h.services, {
    admission: gate(),
    queue: { longPollTimeoutMs: 1_000 },
    ...options,
  });
  desks.push(d);
  return d;
}

/** Resolves with the next prompt the bot posts (its id and content). */
function nextPrompt(): Promise<{ id: number; content: string }> {
  return new Promise((resolve) => {
    const off = h.sim.onRequest(
      (r: SimRequestRecord) => {
        if (r.method !== 'POST' || r.path !== '/api/v1/messages' || r.userId !== h.realm.bot.userId) return;
        off();
        resolve({ id: (r.response as { id: number }).id, content: String(r.params.content) });
      },
      { responses: true },
    );
  });
}

/** Resolves once the bot has edited message `id`, with the new content. */
function edited(id: number): Promise<string> {
  return new Promise((resolve) => {
    const off = h.sim.onRequest((r) => {
      if (r.method !== 'PATCH' || r.path !== `/api/v1/messages/${id}`) return;
      off();
      resolve(String(r.params.content));
    });
  });
}

/** Whether the desk's event queue is in a long poll (so an answer now is heard). */
function listening(): boolean {
  return h.sim.queues(h.realm.bot.userId).some((q) => q.polling && q.eventTypes?.includes('reaction'));
}

const topic = { kind: 'stream' as const, streamId: 0, topic: 'deploys' };

describe('ApprovalDesk', () => {
  it('posts one compact prompt; a ✅ from outside the gate changes nothing, one from an admitted person allows', async () => {
    const g = gate();
    const d = desk({ admission: g });
    const to = { ...topic, streamId: h.realm.streams.general };
    const prompt = nextPrompt();
    const decided = d.request({ to, tool: 'Bash', detail: 'rm -rf build' });
    const posted = await prompt;
    const id = d.waiting()[0] as string;
    expect(posted.content).toContain(`**${id}**`);
    expect(posted.content).toContain('`Bash`: `rm -rf build`');
    expect(posted.content).toContain(`\`yes ${id}\``);
    await until(listening);
    h.sim.realm.addReaction(h.realm.bo.userId, posted.id, 'check');
    h.sim.realm.addReaction(h.realm.bot.userId, posted.id, 'check');
    const edit = edited(posted.id);
    h.sim.realm.addReaction(h.realm.ann.userId, posted.id, 'check');
    const decision = await decided;
    expect(decision).toMatchObject({ id, outcome: 'allowed', allowed: true, byUserId: h.realm.ann.userId });
    expect(await edit).toContain(`Allowed by @_**|${h.realm.ann.userId}**`);
    expect(g.refusals().byPath.approval).toBe(1);
  });

  it('takes `no <id>` from an admitted person in the conversation, never from anyone else', async () => {
    const g = gate();
    const d = desk({ admission: g });
    const to = { ...topic, streamId: h.realm.streams.general };
    const prompt = nextPrompt();
    const decided = d.request({ to, tool: 'Write', detail: '/etc/passwd' });
    const posted = await prompt;
    const id = d.waiting()[0] as string;
    await until(listening);
    h.post(h.realm.bo, 'general', 'deploys', `yes ${id}`);
    // The right person in another topic does not answer it either.
    h.post(h.realm.ann, 'general', 'elsewhere', `yes ${id}`);
    const edit = edited(posted.id);
    h.post(h.realm.ann, 'general', 'deploys', `no ${id.toUpperCase()}`);
    expect(await decided).toMatchObject({ outcome: 'denied', allowed: false, byUserId: h.realm.ann.userId });
    expect(await edit).toContain('Denied by');
    expect(g.refusals().byPath.approval).toBe(1);
    // Still the answer to a request, never chat; an id never asked is chat.
    expect(d.claims(`yes ${id}`)).toBe(true);
    expect(d.claims('yes zzzzz')).toBe(false);
  });

  it('denies on timeout and when the agent ends, and says so in the prompt', async () => {
    const d = desk({ timeoutMs: 50 });
    const to = { ...topic, streamId: h.realm.streams.general };
    const prompt = nextPrompt();
    const timedOut = d.request({ to, tool: 'Bash', detail: 'make' });
    const posted = await prompt;
    const edit = edited(posted.id);
    expect(await timedOut).toMatchObject({ outcome: 'timed-out', allowed: false, byUserId: undefined });
    expect(await edit).toContain('No answer in time: denied');

    const agent = new AbortController();
    const second = nextPrompt();
    const ended = desk().request({ to, tool: 'Bash', detail: 'make', signal: agent.signal });
    const post2 = await second;
    const edit2 = edited(post2.id);
    agent.abort();
    expect(await ended).toMatchObject({ outcome: 'ended', allowed: false });
    expect(await edit2).toContain('The agent ended before an answer');

    const third = nextPrompt();
    const d3 = desk();
    const closing = d3.request({ to, tool: 'Bash' });
    await third;
    await d3.close();
    expect(await closing).toMatchObject({ outcome: 'ended', allowed: false });
  });

  it('without a gate nobody can answer (fail closed)', async () => {
    const d = desk({ admission: undefined });
    const to = { ...topic, streamId: h.realm.streams.general };
    const prompt = nextPrompt();
    const decided = d.request({ to, tool: 'Bash' });
    const posted = await prompt;
    await until(listening);
    h.sim.realm.addReaction(h.realm.ann.userId, posted.id, 'check');
    // The desk has read the reaction (acknowledged it and polls again), and still waits.
    await until(() =>
      h.sim
        .queues(h.realm.bot.userId)
        .some(
          (q) =>
            q.eventTypes?.includes('reaction') && q.polling && q.acknowledgedEventId >= 0 && q.pending === 0,
        ),
    );
    expect(d.waiting()).toHaveLength(1);
    await d.close();
    expect(await decided).toMatchObject({ outcome: 'ended', allowed: false });
  });

  it('shows hostile tool names and arguments as one escaped line that cannot leave its code span', async () => {
    const d = desk();
    const to = { ...topic, streamId: h.realm.streams.general };
    const prompt = nextPrompt();
    void d.request({ to, tool: 'Bash\n@**all**', detail: 'echo ``` `x`\n\u202e@**all** \u{E0041}' });
    const posted = await prompt;
    const first = posted.content.split('\n')[0] as string;
    expect(first).toContain('`Bash @**all**`');
    expect(first).toContain('````echo ``` `x` @**all**````');
    expect(posted.content).not.toMatch(/[\u202e]|\u{E0041}/u);
    expect(posted.content.split('\n')).toHaveLength(2);
  });
});

describe('permission_prompt', () => {
  it("answers Claude Code's JSON: allow with the input, deny with a message", async () => {
    const trigger = h.post(h.realm.ann, 'general', 'approve me', '@**Helper Bot** build it');
    const session = createAgentSession(h.services, { launch: { triggerMessageId: trigger } });
    const d = desk();
    const { host } = testHost(permissionPromptTools(session, d), 60_000);
    const input = { command: 'npm test', description: 'run tests' };
    const prompt = nextPrompt();
    const call = callThrough(host, 'permission_prompt', {
      tool_name: 'Bash',
      input,
      tool_use_id: 'toolu_01',
    });
    const posted = await prompt;
    expect(posted.content).toContain('`Bash`: `npm test`');
    await until(listening);
    h.sim.realm.addReaction(h.realm.ann.userId, posted.id, 'check');
    const out = await call;
    if (out.isError) throw new Error(out.text);
    expect(JSON.parse(out.text)).toEqual({ behavior: 'allow', updatedInput: input });
    expect(out.structured).toMatchObject({ behavior: 'allow', updatedInput: input, outcome: 'allowed' });

    const prompt2 = nextPrompt();
    const call2 = callThrough(host, 'permission_prompt', {
      tool_name: 'Bash',
      input: { command: 'rm -rf /' },
    });
    const posted2 = await prompt2;
    await until(listening);
    h.sim.realm.addReaction(h.realm.ann.userId, posted2.id, 'cross_mark');
    const out2 = await call2;
    if (out2.isError) throw new Error(out2.text);
    const parsed = JSON.parse(out2.text) as { behavior: string; message: string };
    expect(parsed.behavior).toBe('deny');
    expect(parsed.message).toMatch(/denied/);
    // AskUserQuestion is not put to anyone: the agent is told to ask in the conversation.
    const before = h.sim.realm.maxMessageId();
    const question = await callThrough(host, 'permission_prompt', {
      tool_name: 'AskUserQuestion',
      input: { questions: [{ question: 'Which env?', header: 'Env', options: [], multiSelect: false }] },
    });
    if (question.isError) throw new Error(question.text);
    expect(JSON.parse(question.text)).toMatchObject({
      behavior: 'deny',
      message: expect.stringMatching(/reply/),
    });
    expect(h.sim.realm.maxMessageId()).toBe(before);
    await session.close();
  });
});
