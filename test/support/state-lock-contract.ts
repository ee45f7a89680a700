// The contract of `StateStore.lock`, as one suite each implementation runs: files
// (packages/delivery/test/state-lock.test.ts) and PostgreSQL (packages/fleet). The lock is what
// keeps two servers from delivering for one session: one holder at a time, across processes, and
// a holder that dies (kill -9) gives it up without anyone's help.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { StateKey, StateLock, StateStore } from '@zmcp/delivery';
import { afterEach, describe, expect, it } from 'vitest';

const KEY: StateKey = { session: 'agent', kind: 'delivery' };

/** A store whose locks to test, fresh for each test, and how to run a lock holder in another process. */
export interface LockUnderTest {
  store: StateStore & Required<Pick<StateStore, 'lock'>>;
  /**
   * The command of a child process that takes the lock of `KEY`'s session on the same state and
   * prints `held <its pid>` or `locked <the holder's pid>`, then (holding) waits until its stdin
   * closes, releases and exits.
   */
  holder: (session: string) => { command: string; args: string[]; cwd: string };
  /** Asserts that nothing of the lock is left once it is free (no file, no marker), where that can be seen. */
  leftNothing?: (() => Promise<void>) | undefined;
  done: () => Promise<void>;
}

interface Holder {
  child: ChildProcess;
  said: Promise<string>;
  exited: Promise<void>;
}

/** Runs the lock contract against the store `make` returns (one per test). */
export function describeStateLockContract(name: string, make: () => Promise<LockUnderTest>): void {
  describe(`${name} keeps the StateStore.lock contract`, () => {
    const running = new Set<ChildProcess>();
    const cleanups: (() => Promise<void>)[] = [];

    afterEach(async () => {
      for (const child of running) child.kill('SIGKILL');
      running.clear();
      for (const done of cleanups.splice(0)) await done();
    });

    async function fresh(): Promise<LockUnderTest> {
      const under = await make();
      cleanups.push(under.done);
      return under;
    }

    function holder(under: LockUnderTest): Holder {
      const { command, args, cwd } = under.holder(KEY.session);
      const child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'inherit'] });
      running.add(child);
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
      const said = new Promise<string>((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code) =>
          reject(new Error(`the lock holder exited (${code}) before saying anything`)),
        );
      });
      return { child, said, exited };
    }

    it('holds a session against a second taker until released, then lets it go', async () => {
      const { store } = await fresh();
      const lock = await store.lock(KEY);
      await expect(store.lock(KEY)).rejects.toMatchObject({
        name: 'DeliveryError',
        code: 'DELIVERY_STATE_LOCKED',
        details: { file: lock.file, pid: process.pid },
      });
      // Another session, another kind or another account is another lock.
      for (const other of [
        { session: 'other', kind: 'delivery' },
        { session: 'agent', kind: 'monitor' },
        { account: 'chat.example.com@1', session: 'agent', kind: 'delivery' },
      ] as const) {
        await (await store.lock(other)).release();
      }
      await lock.release();
      await lock.release();
      const again = await store.lock(KEY);
      await again.release();
    });

    it('gives one of many simultaneous takers the lock', async () => {
      const { store } = await fresh();
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => store.lock(KEY)));
      const held = results.filter((r): r is PromiseFulfilledResult<StateLock> => r.status === 'fulfilled');
      expect(held).toHaveLength(1);
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
      }
      await held[0]?.value.release();
    });

    it('refuses while another process holds it, and takes it over once that process is killed', async () => {
      const under = await fresh();
      const first = holder(under);
      expect(await first.said).toBe(`held ${first.child.pid}`);
      await expect(under.store.lock(KEY)).rejects.toMatchObject({
        code: 'DELIVERY_STATE_LOCKED',
        details: { pid: first.child.pid },
      });
      first.child.kill('SIGKILL');
      await first.exited;
      const lock = await under.store.lock(KEY);
      await lock.release();
    });

    it('lets exactly one of several processes take over a dead holder’s lock', async () => {
      const under = await fresh();
      const dead = holder(under);
      await dead.said;
      dead.child.kill('SIGKILL');
      await dead.exited;
      const takers = Array.from({ length: 4 }, () => holder(under));
      const said = await Promise.all(takers.map((t) => t.said));
      const winners = takers.filter((t, i) => said[i] === `held ${t.child.pid}`);
      expect(winners).toHaveLength(1);
      const winner = winners[0]?.child.pid;
      for (const line of said) expect([`held ${winner}`, `locked ${winner}`]).toContain(line);
      // The winner lets go when its stdin closes; the lock is free again.
      winners[0]?.child.stdin?.end();
      await Promise.all(takers.map((t) => t.exited));
      await (await under.store.lock(KEY)).release();
      await under.leftNothing?.();
    });
  });
}
