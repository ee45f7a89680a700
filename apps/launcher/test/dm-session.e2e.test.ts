// A DM conversation is one session: each DM run of Claude Code carries the conversation's session
// on (`--resume`), and `/new` starts a fresh one (`--session-id`).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startWorld, type World } from './world.js';

let w: World;

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  await w.close();
});

/** The zulip server reads DMs only with ZULIP_PRIVATE_STREAMS=__ALL__. */
function dmServer() {
  return {
    ...w.server,
    env: { ...(w.server.env as Record<string, string>), ZULIP_PRIVATE_STREAMS: '__ALL__' },
  };
}

function sessionArgs(argv: readonly string[]): [string, string] | undefined {
  const i = argv.findIndex((a) => a === '--session-id' || a === '--resume');
  return i < 0 ? undefined : [argv[i] as string, argv[i + 1] as string];
}

describe('a DM conversation', () => {
  it('is one Claude Code session across runs, and /new starts a fresh one', async () => {
    await w.launch({ progress: false, mcpServer: dmServer() });
    const first = w.dm(w.ann, 'what is our deploy policy?');
    expect((await w.ended(first)).outcome).toBe('done');
    const second = w.dm(w.ann, 'and for hotfixes?');
    expect((await w.ended(second)).outcome).toBe('done');
    const fresh = w.dm(w.ann, '/new unrelated: who is on call?');
    expect((await w.ended(fresh)).outcome).toBe('done');
    // Cy's DM conversation is a session of its own.
    const other = w.dm(w.cy, 'hello');
    expect((await w.ended(other)).outcome).toBe('done');

    const runs = w.records().sort((a, b) => a.startedAt - b.startedAt);
    expect(runs.map((r) => r.usageError)).toEqual([undefined, undefined, undefined, undefined]);
    const [a, b, c, d] = runs.map((r) => sessionArgs(r.argv));
    expect(a?.[0]).toBe('--session-id');
    expect(b).toEqual(['--resume', a?.[1]]);
    expect(c?.[0]).toBe('--session-id');
    expect(c?.[1]).not.toBe(a?.[1]);
    expect(d?.[0]).toBe('--session-id');
    expect(new Set([a?.[1], c?.[1], d?.[1]]).size).toBe(3);
  });

  it('starts afresh after a run that failed', async () => {
    await w.launch({ progress: false, mcpServer: dmServer(), env: { ...w.env, STUB_MODE: 'fail' } });
    const first = w.dm(w.ann, 'one');
    expect((await w.ended(first)).outcome).toBe('failed');
    const second = w.dm(w.ann, 'two');
    await w.ended(second);
    const [a, b] = w
      .records()
      .sort((x, y) => x.startedAt - y.startedAt)
      .map((r) => sessionArgs(r.argv));
    expect(a?.[0]).toBe('--session-id');
    expect(b?.[0]).toBe('--session-id');
  });
});
