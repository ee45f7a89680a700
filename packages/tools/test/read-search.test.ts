import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

interface Result {
  public_only: boolean;
  ids: number[];
  hidden: number;
  truncated: boolean;
  has_more: boolean;
  direction: 'older' | 'newer';
  next_cursor: string | null;
}

async function ok(
  h: Harness,
  args: Record<string, unknown>,
): Promise<{ text: string; out: Result; result: ToolCallOutcome }> {
  const r = await h.call('search_messages', args);
  if (r.isError) throw new Error(`search_messages failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, 'search_messages', r);
  return { text: r.text, out: structured as unknown as Result, result: r };
}

async function fail(h: Harness, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolFailure> {
  const r = await h.call('search_messages', args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

const ids = (o: Result) => o.ids;

interface Seeded {
  plan: number;
  down: number;
  file: number;
  other: number;
  mention: number;
  secret: number;
  dm: number;
  nobots: number;
}

function seed(h: Harness): Seeded {
  const { ann, bo, bot } = h.realm;
  const upload = h.sim.realm.upload(ann.userId, 'plan.txt', new TextEncoder().encode('plan'), 'text/plain');
  const out: Seeded = {
    plan: h.post(ann, 'general', 'deploys', 'deploy the router today'),
    down: h.post(bo, 'general', 'deploys', 'the router is down, see https://status.example.com'),
    file: h.post(ann, 'general', 'files', `router notes: [plan.txt](${upload.url})`),
    other: h.post(bo, 'dev', 'misc', 'nothing to see'),
    mention: h.post(bo, 'general', 'misc', '@**Helper Bot** can you check the router?'),
    secret: h.post(ann, 'secret', 'plans', 'router secret plan'),
    dm: h.sim.realm.sendMessage({
      senderId: ann.userId,
      type: 'direct',
      to: [bot.userId],
      content: 'router dm',
    }),
    nobots: h.post(bo, 'general', 'deploys', 'router gossip /nobots'),
  };
  return out;
}

describe('search_messages', () => {
  let h: Harness;
  let m: Seeded;

  beforeAll(async () => {
    h = await startHarness();
    m = seed(h);
  });
  afterAll(async () => {
    await h.close();
  });

  it('searches public streams only without a stream, and says so', async () => {
    const { text, out } = await ok(h, { query: 'router' });
    expect(ids(out)).toEqual([m.plan, m.down, m.file, m.mention]);
    expect(out).toMatchObject({
      public_only: true,
      hidden: 1,
      direction: 'older',
    });
    const head = text.split('\n')[0] as string;
    expect(head).toMatch(/^4 matches in public streams/);
    expect(head).toContain('1 message hidden');
    expect(head).toContain('Only public streams were searched');
    expect(text).not.toContain('secret plan');
    expect(text).not.toContain('router dm');
    expect(text).not.toContain('gossip');
    expect(text).toContain(`id=${m.down}] [#general > deploys] Bo Chen: the router is down`);
  });

  it('combines filters: stream, topic, sender, has, is', async () => {
    expect(ids((await ok(h, { query: 'router', stream: 'general', sender: 'Bo Chen' })).out)).toEqual([
      m.down,
      m.mention,
    ]);
    expect(ids((await ok(h, { stream: 'general', topic: 'deploys' })).out)).toEqual([m.plan, m.down]);
    expect(ids((await ok(h, { topic: 'misc', sender: h.realm.bo.userId })).out)).toEqual([
      m.other,
      m.mention,
    ]);
    expect(ids((await ok(h, { has: ['link'] })).out)).toEqual([m.down, m.file]);
    expect(ids((await ok(h, { has: ['attachment'], query: 'notes' })).out)).toEqual([m.file]);
    expect(ids((await ok(h, { is: ['mentioned'] })).out)).toEqual([m.mention]);
    h.sim.realm.setFlag(h.realm.bot.userId, [m.plan], 'starred', 'add');
    expect(ids((await ok(h, { is: ['starred'] })).out)).toEqual([m.plan]);
    const named = await ok(h, { query: 'router', stream: 'general' });
    expect(named.out).toMatchObject({ public_only: false });
    expect(named.text.split('\n')[0]).toMatch(/^4 matches in #general \(ids /);
    expect(named.text).not.toContain('Only public streams');
  });

  it('searches a date range from its start', async () => {
    const { out } = await ok(h, { query: 'router', when: 'today', limit: 2 });
    expect(out.direction).toBe('newer');
    expect(ids(out)).toEqual([m.plan, m.down]);
    const next = await ok(h, { query: 'router', when: 'today', limit: 2, cursor: out.next_cursor });
    expect(ids(next.out)).toEqual([m.file, m.mention]);
    expect(ids((await ok(h, { query: 'router', when: 'yesterday' })).out)).toEqual([]);
  });

  it('refuses bad arguments, naming the field', async () => {
    const none = await fail(h, {});
    expect(none.code).toBe('TOOLS_INVALID_INPUT');
    expect(none.text).toMatch(/query/);
    expect((await fail(h, { query: 'q'.repeat(201) })).text).toMatch(/query/);
    expect((await fail(h, { query: '   ' })).text).toMatch(/query/);
    expect((await fail(h, { has: ['video'] })).text).toMatch(/has/);
    expect((await fail(h, { is: ['read'] })).text).toMatch(/is/);
    expect((await fail(h, { when: 'someday' })).text).toMatch(/when/);
    expect((await fail(h, { query: 'x', sender: 'Nobody At All' })).code).toBe('CORE_USER_NOT_FOUND');
  });

  it('refuses a closed private stream and a /nobots topic', async () => {
    const denied = await fail(h, { query: 'router', stream: 'secret' });
    expect(denied.code).toBe('CORE_ACCESS_DENIED');
    expect(denied.text).not.toContain('secret plan');
    expect((await fail(h, { query: 'router', stream: 'hidden' })).isError).toBe(true);
    expect((await fail(h, { topic: 'lunch /nobots' })).code).toBe('TOOLS_NOT_FOUND');
  });

  it('refuses cursors of other searches and the wrong direction', async () => {
    const { out } = await ok(h, { query: 'router', limit: 1 });
    expect((await fail(h, { query: 'deploy', limit: 1, cursor: out.next_cursor })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
    const after = encodeCursor('search_messages', { query: 'router' }, { kind: 'after', id: 1 });
    expect((await fail(h, { query: 'router', cursor: after })).code).toBe('TOOLS_INVALID_CURSOR');
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, { query: 'router' }, expiredSignal())).code).toBe('TOOLS_DEADLINE');
  });
});

describe('search_messages under other policies', () => {
  it('searches everything, DMs included, when the policy reads everything', async () => {
    const h = await startHarness({ policy: { privateStreams: '__ALL__' } });
    try {
      const m = seed(h);
      const { text, out } = await ok(h, { query: 'router' });
      expect(ids(out)).toEqual([m.plan, m.down, m.file, m.mention, m.secret, m.dm]);
      expect(out.public_only).toBe(false);
      expect(text).not.toContain('Only public streams');
    } finally {
      await h.close();
    }
  });

  it('searches an allowlisted private stream only when it is named', async () => {
    const h = await startHarness({ policy: { privateStreams: ['secret'] } });
    try {
      const m = seed(h);
      expect(ids((await ok(h, { query: 'router' })).out)).not.toContain(m.secret);
      expect(ids((await ok(h, { query: 'router', stream: 'secret' })).out)).toEqual([m.secret]);
    } finally {
      await h.close();
    }
  });

  it('cuts results to a small page budget and continues with the cursor', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024 });
    try {
      const all: number[] = [];
      for (let i = 0; i < 8; i++)
        all.push(h.post(h.realm.ann, 'general', 'noise', `needle ${i} ${'n'.repeat(60)}`));
      const first = await ok(h, { query: 'needle', limit: 100 });
      expect(first.out.truncated).toBe(true);
      expectWithinBudget(first.result, 1024);
      expect(ids(first.out)).toEqual(all.slice(-first.out.ids.length));
      const seen = [...ids(first.out)];
      let cursor = first.out.next_cursor;
      while (cursor !== null) {
        const { out } = await ok(h, { query: 'needle', limit: 100, cursor });
        seen.push(...ids(out));
        cursor = out.next_cursor;
      }
      expect(seen.sort((a, b) => a - b)).toEqual(all);
    } finally {
      await h.close();
    }
  });
});
