// `zulip-mcp hook`: the Claude Code plugin's hooks post the session's lifecycle into the bound
// topic, through the one posting function (write policy, send once), from the event on stdin.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hookMain } from '../src/hook.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

let realm: SmallRealm;
let stateDir: string;
beforeEach(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-hook-'));
});
afterEach(async () => {
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

/** Runs the hook with `event` on stdin; its exit code, stdout and stderr. */
async function runHook(event: unknown, extra: Record<string, string> = {}) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  stdin.end(typeof event === 'string' ? event : JSON.stringify(event));
  const code = await hookMain([], realm.env(stateDir, extra), { stdin, stdout, stderr });
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** The bot's messages in a topic of #general. */
function botSaid(topic: string): string[] {
  const out: string[] = [];
  for (let id = 1; id <= realm.sim.realm.maxMessageId(); id++) {
    const m = realm.sim.realm.message(id);
    if (m?.senderId === realm.botId && m.topic === topic) out.push(m.content);
  }
  return out;
}

const base = {
  session_id: '3f2a9c1e-0d4b-4e7a-9c6f-2b8d1a7e5c40',
  transcript_path: '/tmp/t.jsonl',
  cwd: '/work',
};
const bound = { SESSION_STREAM: 'general', SESSION_TOPIC: 'agent work' };

describe('zulip-mcp hook', () => {
  it('posts started, waiting for permission, failed and finished into the bound topic, printing nothing', async () => {
    const events = [
      { ...base, hook_event_name: 'SessionStart', source: 'startup' },
      {
        ...base,
        hook_event_name: 'Notification',
        notification_type: 'permission_prompt',
        message: 'Claude needs your permission to use Bash',
      },
      { ...base, hook_event_name: 'StopFailure', error: 'rate_limit' },
      { ...base, hook_event_name: 'SessionEnd', reason: 'other' },
    ];
    for (const event of events) {
      const run = await runHook(event, bound);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe('');
    }
    expect(botSaid('agent work')).toEqual([
      'Claude Code session `3f2a9c1e` started.',
      'Claude Code session `3f2a9c1e` is waiting for permission: `Claude needs your permission to use Bash`.',
      'Claude Code session `3f2a9c1e` failed (`rate_limit`).',
      'Claude Code session `3f2a9c1e` finished.',
    ]);
  });

  it('takes its settings from the plugin options, and the topic from the trigger message', async () => {
    const trigger = realm.post('@**Helper Bot** please look', 'called here');
    const run = await runHook(
      { ...base, hook_event_name: 'SessionStart', source: 'startup' },
      { CLAUDE_PLUGIN_OPTION_TRIGGER_MESSAGE_ID: String(trigger), CLAUDE_PLUGIN_OPTION_NOT_A_SETTING: 'x' },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(botSaid('called here')).toEqual(['Claude Code session `3f2a9c1e` started.']);
  });

  it('keeps notification text inside its code span: no mention, format or fence escapes it', async () => {
    const run = await runHook(
      {
        ...base,
        hook_event_name: 'Notification',
        notification_type: 'permission_prompt',
        message: 'use `mcp__x__y` @**all** <b>now</b>\n```\n# heading [link](http://x)',
      },
      bound,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(botSaid('agent work')).toEqual([
      'Claude Code session `3f2a9c1e` is waiting for permission: `use mcp__x__y @**all** <b>now</b> # heading [link](http://x)`.',
    ]);
  });

  it('stays quiet about other events, and without a bound topic', async () => {
    for (const event of [
      { ...base, hook_event_name: 'SessionStart', source: 'compact' },
      { ...base, hook_event_name: 'Notification', notification_type: 'idle_prompt', message: 'waiting' },
      { ...base, hook_event_name: 'PreToolUse', tool_name: 'Bash' },
    ]) {
      expect((await runHook(event, bound)).code).toBe(0);
    }
    const unbound = await runHook({ ...base, hook_event_name: 'SessionStart', source: 'startup' });
    expect(unbound.code).toBe(0);
    expect(unbound.stderr).toContain('no bound topic');
    expect(botSaid('agent work')).toEqual([]);
    expect(realm.sim.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('fails (never with 2, which blocks Claude Code) on no event, and posts nothing the policy refuses', async () => {
    const none = await runHook('not json', bound);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('hook event');
    const readOnly = await runHook(
      { ...base, hook_event_name: 'SessionEnd', reason: 'other' },
      { ...bound, ZULIP_READ_ONLY: 'on' },
    );
    expect(readOnly.code).toBe(1);
    expect(readOnly.stderr).toContain('CORE_READ_ONLY');
    const misconfigured = await runHook(
      { ...base, hook_event_name: 'SessionEnd', reason: 'other' },
      { ...bound, ZULIP_PAGE_BUDGET_BYTES: 'lots' },
    );
    expect(misconfigured.code).toBe(1);
    expect(misconfigured.stderr).toContain('ZULIP_PAGE_BUDGET_BYTES');
    expect(botSaid('agent work')).toEqual([]);
  });
});
