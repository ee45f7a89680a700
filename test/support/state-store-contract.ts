// The contract every StateStore keeps, as one suite each implementation runs: memory and files
// (packages/delivery/test/state-store.test.ts) and PostgreSQL (packages/fleet). An implementation
// passes it by keeping the rules of `StateStore` in @zmcp/delivery, with the same error codes.
import { isDeliveryError, type StateKey, type StateStore } from '@zmcp/delivery';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

const CounterSchema = z.object({ count: z.number().int().nonnegative(), by: z.array(z.string()) });
type Counter = z.infer<typeof CounterSchema>;
const key: StateKey = { session: 'my-agent', kind: 'delivery' };

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** A store to test, fresh for each test. */
export interface StoreUnderTest {
  store: StateStore;
  /**
   * A second store on the same state (another instance, another connection pool): updates of
   * one key through both must still be serialized. Absent for a store that lives in one object;
   * then the test of it is not part of the suite.
   */
  another?: (() => StateStore | Promise<StateStore>) | undefined;
  done: () => Promise<void>;
}

/**
 * Runs the StateStore contract against the store `make` returns (one per test); `shared`: `make`
 * gives `another` store on the same state.
 */
export function describeStateStoreContract(
  name: string,
  make: () => Promise<StoreUnderTest>,
  options: { shared: boolean },
): void {
  describe(`${name} keeps the StateStore contract`, () => {
    let store: StateStore;
    let under: StoreUnderTest;

    beforeEach(async () => {
      under = await make();
      store = under.store;
    });
    afterEach(async () => {
      await under.done();
    });

    it('reads undefined for a key never written', async () => {
      expect(await store.read(key, CounterSchema)).toBeUndefined();
    });

    it('reads back what was written, as a copy', async () => {
      const value: Counter = { count: 3, by: ['a'] };
      await store.write(key, value);
      value.by.push('mutated after write');
      expect(await store.read(key, CounterSchema)).toEqual({ count: 3, by: ['a'] });
    });

    it('keeps kinds and sessions apart', async () => {
      await store.write(key, { count: 1, by: [] });
      expect(await store.read({ session: 'my-agent', kind: 'monitor' }, CounterSchema)).toBeUndefined();
      expect(await store.read({ session: 'other', kind: 'delivery' }, CounterSchema)).toBeUndefined();
    });

    it('stores every kind, the send-once memory (`sends`) included', async () => {
      const kinds = ['monitor', 'delivery', 'filters', 'key', 'agent', 'task', 'sends'] as const;
      for (const kind of kinds) {
        await store.write({ account: 'a.example@1', session: 'outbox', kind }, { count: 1, by: [kind] });
      }
      for (const kind of kinds) {
        expect(await store.read({ account: 'a.example@1', session: 'outbox', kind }, CounterSchema)).toEqual({
          count: 1,
          by: [kind],
        });
      }
    });

    it('keeps accounts apart, and apart from the unscoped key', async () => {
      const a: StateKey = { account: 'a.example@1', session: 'my-agent', kind: 'delivery' };
      const b: StateKey = { account: 'b.example@1', session: 'my-agent', kind: 'delivery' };
      await store.write(a, { count: 1, by: [] });
      await store.update(b, CounterSchema, () => ({ count: 2, by: [] }));
      expect(await store.read(a, CounterSchema)).toEqual({ count: 1, by: [] });
      expect(await store.read(b, CounterSchema)).toEqual({ count: 2, by: [] });
      expect(await store.read(key, CounterSchema)).toBeUndefined();
      await store.delete(a);
      expect(await store.read(a, CounterSchema)).toBeUndefined();
      expect(await store.read(b, CounterSchema)).toEqual({ count: 2, by: [] });
    });

    it('delete forgets the value, and deleting nothing is fine', async () => {
      await store.write(key, { count: 1, by: [] });
      await store.delete(key);
      expect(await store.read(key, CounterSchema)).toBeUndefined();
      await store.delete(key);
    });

    it('serializes concurrent updates of one key: no update is lost', async () => {
      const writers = Array.from({ length: 40 }, (_, i) => `w${i}`);
      await Promise.all(
        writers.map((w) =>
          store.update(key, CounterSchema, async (prev) => {
            // Yield inside the critical section: an unserialized store would interleave here.
            await Promise.resolve();
            return { count: (prev?.count ?? 0) + 1, by: [...(prev?.by ?? []), w] };
          }),
        ),
      );
      const final = await store.read(key, CounterSchema);
      expect(final?.count).toBe(40);
      expect(final?.by).toEqual(writers);
    });

    it('update returns the new value and passes undefined the first time', async () => {
      const seen: Array<Counter | undefined> = [];
      const first = await store.update(key, CounterSchema, (prev) => {
        seen.push(prev);
        return { count: 1, by: ['x'] };
      });
      expect(seen).toEqual([undefined]);
      expect(first).toEqual({ count: 1, by: ['x'] });
    });

    it('an update whose function throws writes nothing', async () => {
      await store.write(key, { count: 1, by: [] });
      const boom = new Error('boom');
      expect(
        await caught(
          store.update(key, CounterSchema, () => {
            throw boom;
          }),
        ),
      ).toBe(boom);
      expect(await store.read(key, CounterSchema)).toEqual({ count: 1, by: [] });
    });

    it('refuses an update result that fails the schema, keeping the old state', async () => {
      await store.write(key, { count: 1, by: [] });
      const err = await caught(store.update(key, CounterSchema, () => ({ count: -1, by: [] })));
      expect(isDeliveryError(err, 'DELIVERY_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toMatch(/count/);
      expect(await store.read(key, CounterSchema)).toEqual({ count: 1, by: [] });
    });

    it('refuses a value JSON cannot carry', async () => {
      for (const value of [undefined, () => 1, { n: 10n }]) {
        const err = await caught(store.write(key, value));
        expect(isDeliveryError(err, 'DELIVERY_INVALID_ARGUMENT')).toBe(true);
      }
      expect(await store.read(key, CounterSchema)).toBeUndefined();
    });

    it('reports data failing the schema as DELIVERY_STATE_CORRUPT, and update leaves it alone', async () => {
      await store.write(key, { count: 'three', by: [] });
      const err = await caught(store.read(key, CounterSchema));
      expect(isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')).toBe(true);
      expect((err as Error).message).toMatch(/my-agent\.delivery\.json/);
      expect((err as Error).message).toMatch(/count/);
      expect((err as { details: { file: string } }).details.file).toMatch(/my-agent\.delivery\.json$/);

      const updateErr = await caught(store.update(key, CounterSchema, () => ({ count: 0, by: [] })));
      expect(isDeliveryError(updateErr, 'DELIVERY_STATE_CORRUPT')).toBe(true);
      // Still corrupt: the caller decides (write over it, or delete it).
      expect(isDeliveryError(await caught(store.read(key, CounterSchema)), 'DELIVERY_STATE_CORRUPT')).toBe(
        true,
      );
      await store.write(key, { count: 0, by: [] });
      expect(await store.read(key, CounterSchema)).toEqual({ count: 0, by: [] });
    });

    it('validates session ids on every operation', async () => {
      const bad: StateKey = { session: '../escape', kind: 'monitor' };
      for (const op of [
        store.read(bad, CounterSchema),
        store.write(bad, { count: 0, by: [] }),
        store.update(bad, CounterSchema, () => ({ count: 0, by: [] })),
        store.delete(bad),
      ]) {
        expect(isDeliveryError(await caught(op), 'DELIVERY_INVALID_SESSION_ID')).toBe(true);
      }
    });

    if (!options.shared) return;
    it('serializes updates of one key across two stores on the same state', async () => {
      const other = await (under.another as NonNullable<StoreUnderTest['another']>)();
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).update(key, CounterSchema, async (prev) => {
            await Promise.resolve();
            return { count: (prev?.count ?? 0) + 1, by: [] };
          }),
        ),
      );
      expect(await store.read(key, CounterSchema)).toEqual({ count: 20, by: [] });
      expect(await other.read(key, CounterSchema)).toEqual({ count: 20, by: [] });
    });
  });
}
