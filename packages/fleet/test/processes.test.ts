// The fleet's process registry and its counted leases, on the tests' real PostgreSQL: two
// backends on one schema stand for two processes.
import { afterEach, describe, expect, it } from 'vitest';
import { dropAfterAll, openTestBackend, sql, uniqueSchema } from '../../../test/support/postgres.js';

dropAfterAll();

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

async function twoProcesses() {
  const schema = uniqueSchema();
  const one = await openTestBackend({ schema });
  const two = await openTestBackend({ schema });
  closing.push(one, two);
  const registry = (b: typeof one) => {
    if (b.processes === undefined) throw new Error('PostgreSQL has a process registry');
    return b.processes;
  };
  return { schema, one: registry(one), two: registry(two) };
}

/** Makes a process's row look unseen for a minute: it died, or lost the database. */
async function silence(schema: string, id: string): Promise<void> {
  await sql(`UPDATE "${schema}".processes SET last_seen = now() - interval '1 minute' WHERE id = $1`, [id]);
}

describe('the process registry', () => {
  it('lists every registered process with its bin, pid and host; a silent one as gone; a closed one not at all', async () => {
    const { schema, one, two } = await twoProcesses();
    const a = await one.register({ bin: 'zulip-mcp' });
    const b = await two.register({ bin: 'zulip-mcpl' });
    closing.push(a, b);
    const listed = await two.list();
    expect(listed.map((p) => [p.id, p.bin, p.pid, p.gone])).toEqual([
      [a.id, 'zulip-mcp', process.pid, false],
      [b.id, 'zulip-mcpl', process.pid, false],
    ]);
    expect(listed[0]?.host).not.toBe('');
    expect(Date.parse(listed[0]?.lastSeen ?? '')).toBeGreaterThanOrEqual(
      Date.parse(listed[0]?.startedAt ?? ''),
    );
    await silence(schema, a.id);
    expect((await one.list()).map((p) => [p.id, p.gone])).toEqual([
      [a.id, true],
      [b.id, false],
    ]);
    await b.close();
    expect((await one.list()).map((p) => p.id)).toEqual([a.id]);
    // Gone for over an hour: forgotten.
    await sql(`UPDATE "${schema}".processes SET last_seen = now() - interval '2 hours' WHERE id = $1`, [
      a.id,
    ]);
    expect(await one.list()).toEqual([]);
  });
});

describe('counted leases', () => {
  it('hold a cap across processes, free a slot on release, and stop counting those of a process that is gone', async () => {
    const { schema, one, two } = await twoProcesses();
    const a = await one.register({ bin: 'zulip-mcp' });
    const b = await two.register({ bin: 'zulip-mcp' });
    closing.push(a, b);
    const scope = 'waits/acct/0123456789abcdef';
    const first = await a.lease(scope, 2);
    const second = await b.lease(scope, 2);
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(await a.lease(scope, 2)).toBeUndefined();
    expect(await b.lease(scope, 2)).toBeUndefined();
    // Another scope (another token) has its own count.
    expect(await b.lease('waits/acct/fedcba9876543210', 2)).toBeTypeOf('function');
    await second?.();
    await second?.();
    const third = await a.lease(scope, 2);
    expect(third).toBeTypeOf('function');
    expect(await b.lease(scope, 2)).toBeUndefined();
    // Process a dies with its two leases: once it is gone, they no longer count.
    await silence(schema, a.id);
    expect(await b.lease(scope, 2)).toBeTypeOf('function');
    expect(await b.lease(scope, 2)).toBeTypeOf('function');
    expect(await b.lease(scope, 2)).toBeUndefined();
  });

  it('let exactly max of many concurrent takers through', async () => {
    const { one, two } = await twoProcesses();
    const a = await one.register({ bin: 'zulip-mcp' });
    const b = await two.register({ bin: 'zulip-mcp' });
    closing.push(a, b);
    const taken = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).lease('waits/race', 3)),
    );
    expect(taken.filter((t) => t !== undefined)).toHaveLength(3);
  });
});
