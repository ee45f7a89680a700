// Approvals in the topic: a Claude Code agent asks before a tool its rules do not allow, through
// --permission-prompt-tool and its zulip server's permission_prompt; only a person the launcher
// admits answers it, by ✅ or `yes <id>`; anyone else's answer changes nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startWorld, type World } from './world.js';

let w: World;

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  await w.close();
});

/** The next approval prompt the bot posts in `topic`, with its request id. */
async function prompt(topic: string): Promise<{ messageId: number; requestId: string }> {
  const request = await w.nextRequest(
    (r) =>
      r.method === 'POST' &&
      r.path.endsWith('/messages') &&
      r.userId === w.bot.userId &&
      String(r.params.topic) === topic &&
      String(r.params.content).startsWith('🔐'),
  );
  const requestId = /^🔐 \*\*([a-km-z]{5})\*\*/.exec(String(request.params.content))?.[1] as string;
  const message = w.messages({ topic, sender: w.bot.userId }).find((m) => m.content.includes(requestId));
  return { messageId: message?.id as number, requestId };
}

function botSays(text: string) {
  return (r: {
    method: string;
    path: string;
    userId: number | null;
    params: Readonly<Record<string, unknown>>;
  }) =>
    r.method === 'POST' &&
    r.path.endsWith('/messages') &&
    r.userId === w.bot.userId &&
    String(r.params.content ?? '').includes(text);
}

/** Waits until the agent's zulip server reads reactions (its approvals desk is listening). */
async function deskListening(): Promise<void> {
  while (!w.sim.queues(w.bot.userId).some((q) => q.polling && q.eventTypes?.includes('reaction')))
    await new Promise((resolve) => setImmediate(resolve));
}

describe('approvals', () => {
  it('asks in the topic; a ✅ from outside the gate changes nothing, an admitted ✅ runs the tool', async () => {
    await w.launch();
    const asked = prompt('deploy');
    const trigger = w.mention(w.ann, 'deploy', '[stub:approve] ship it');
    const { messageId, requestId } = await asked;
    const record = w.records().find((r) => r.backend === 'claude');
    expect(record?.argv).toEqual(
      expect.arrayContaining(['--permission-prompt-tool', 'mcp__zulip__permission_prompt']),
    );
    expect(w.sim.realm.message(messageId)?.content).toContain('`Bash`: `make deploy`');
    await deskListening();
    // Bo is not admitted: neither his ✅ nor his "yes" answers.
    w.sim.realm.addReaction(w.bo.userId, messageId, 'check');
    w.post(w.bo, 'deploy', `yes ${requestId}`);
    const ran = w.nextRequest(botSays('Bash allowed: ran make deploy'));
    w.sim.realm.addReaction(w.cy.userId, messageId, 'check');
    await ran;
    expect(w.sim.realm.message(messageId)?.content).toContain(`Allowed by @_**|${w.cy.userId}**`);
    const bot = w.messages({ topic: 'deploy', sender: w.bot.userId }).at(-1);
    w.sim.realm.addReaction(w.ann.userId, bot?.id as number, 'stop');
    expect((await w.ended(trigger)).outcome).toBe('done');
  });

  it('`no <id>` from an admitted person denies, and the agent hears why', async () => {
    await w.launch();
    const asked = prompt('rollback');
    w.mention(w.ann, 'rollback', '[stub:approve]');
    const { requestId } = await asked;
    await deskListening();
    const denied = w.nextRequest(botSays('Bash denied: A person denied this in Zulip'));
    w.post(w.ann, 'rollback', `no ${requestId}`);
    await denied;
  });

  it('asks in the DM for an agent started by a DM, answered there', async () => {
    const env = { ...(w.server.env as Record<string, string>), ZULIP_PRIVATE_STREAMS: '__ALL__' };
    await w.launch({ mcpServer: { ...w.server, env } });
    const asked = w.nextRequest(
      (r) =>
        r.method === 'POST' &&
        r.path.endsWith('/messages') &&
        r.userId === w.bot.userId &&
        String(r.params.content).startsWith('🔐'),
    );
    const dm = w.dm(w.ann, 'please deploy [stub:approve]');
    const request = await asked;
    expect(request.params.type).toBe('direct');
    const requestId = /^🔐 \*\*([a-km-z]{5})\*\*/.exec(String(request.params.content))?.[1] as string;
    await deskListening();
    const answered = w.nextRequest(botSays(`answers your message ${dm}.; Bash allowed: ran make deploy`));
    const answer = w.dm(w.ann, `yes ${requestId}`);
    await answered;
    // The answer was the prompt's, never a trigger: no second run when the agent ends.
    await w.ended(dm);
    expect(w.events.filter((e) => e.type === 'started')).toHaveLength(1);
    expect(w.events.some((e) => e.type === 'trigger' && e.trigger.messageId === answer)).toBe(false);
  });

  it('the agent’s end denies a prompt still waiting, and the prompt says so', async () => {
    const launcher = await w.launch();
    const asked = prompt('shutdown');
    w.mention(w.ann, 'shutdown', '[stub:approve]');
    const { messageId } = await asked;
    await deskListening();
    const edited = w.nextRequest((r) => r.method === 'PATCH' && r.path.endsWith(`/messages/${messageId}`));
    // The launcher stops: the agent and its zulip server go, and the waiting prompt is denied.
    await launcher.close();
    expect(String((await edited).params.content)).toContain('The agent ended before an answer: denied.');
  });

  it('off, the launcher passes no prompt tool, and Claude Code refuses the tool as -p does', async () => {
    await w.launch({ approvals: false });
    const refused = w.nextRequest(botSays('Bash refused'));
    w.mention(w.ann, 'quiet', '[stub:approve]');
    await refused;
    const record = w.records().find((r) => r.backend === 'claude');
    expect(record?.argv).not.toContain('--permission-prompt-tool');
    expect(w.messages({ topic: 'quiet', sender: w.bot.userId }).some((m) => m.content.startsWith('🔐'))).toBe(
      false,
    );
  });
});
