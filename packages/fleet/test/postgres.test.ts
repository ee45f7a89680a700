import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import { DeliveryEngine, type DeliverySink, type FiltersEvent, stateAccount } from '@zmcp/delivery';
import { openStateBackend, type PostgresStateLock, SCHEMA_VERSION } from '@zmcp/fleet';
import { startZulipSim } from '@zmcp/zulip-sim';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  dropAfterAll,
  openTestBackend,
  postgresUrl,
  sql,
  uniqueSchema,
} from '../../../test/support/postgres.js';

dropAfterAll();

const Counter = z.object({ count: z.number().int() });
const KEY = { session: 'agent', kind: 'delivery' } as const;

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

async function backend(options: { schema?: string; dir?: string } = {}) {
  const opened = await openTestBackend(options);
  closing.push(opened);
  return opened;
}

/** The backend pid of the connection running `query` (the listener, a lock) in `schema`'s database. */
async function backendPids(like: string): Promise<number[]> {
  const rows = await sql<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'zmcp' AND query LIKE $1 AND pid <> pg_backend_pid()`,
    [like],
  );
  return rows.rows.map((r) => r.pid);
}

describe('opening a PostgreSQL backend', () => {
  it('creates and migrates the schema once, however many processes start together', async () => {
    const schema = uniqueSchema();
    const opened = await Promise.all(Array.from({ length: 4 }, () => backend({ schema })));
    expect(opened.map((b) => b.kind)).toEqual(['postgres', 'postgres', 'postgres', 'postgres']);
    const versions = await sql<{ version: number }>(`SELECT version FROM "${schema}".schema_version`);
    // One row per step, each applied once.
    const steps = Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 }));
    expect(versions.rows).toEqual(steps);
    await backend({ schema });
    expect((await sql(`SELECT 1 FROM "${schema}".schema_version`)).rowCount).toBe(SCHEMA_VERSION);
    const tables = await sql<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1',
      [schema],
    );
    expect(tables.rows.map((r) => r.name)).toEqual([
      'event_log',
      'event_queues',
      'launcher_fleets',
      'launcher_triggers',
      'launcher_workers',
      'leases',
      'locks',
      'processes',
      'schema_version',
      'state',
    ]);
  });

  it('refuses a schema a newer release made incompatible, and runs on a compatible one', async () => {
    const schema = uniqueSchema();
    await (await backend({ schema })).close();
    await sql(
      `INSERT INTO "${schema}".schema_version (version, compatible_from, description) VALUES ($1, $1, 'future')`,
      [SCHEMA_VERSION + 1],
    );
    await expect(openStateBackend({ url: postgresUrl(), schema })).rejects.toMatchObject({
      name: 'FleetError',
      code: 'FLEET_SCHEMA_TOO_NEW',
      details: { version: SCHEMA_VERSION + 1, known: SCHEMA_VERSION },
    });
    await sql(`UPDATE "${schema}".schema_version SET compatible_from = $1 WHERE version = $2`, [
      SCHEMA_VERSION,
      SCHEMA_VERSION + 1,
    ]);
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
    const opened = await openStateBackend({ url: postgresUrl(), schema, logger });
    closing.push(opened);
    expect(warnings).toEqual([expect.stringContaining('newer than this release')]);
  });

  it('names a bad setting, and a server it cannot reach without the password', async () => {
    await expect(openStateBackend({ url: 'mysql://u@localhost/db' })).rejects.toMatchObject({
      code: 'FLEET_INVALID_ARGUMENT',
      details: { option: 'url' },
    });
    await expect(openStateBackend({})).rejects.toMatchObject({
      code: 'FLEET_INVALID_ARGUMENT',
      details: { option: 'dir' },
    });
    await expect(openStateBackend({ url: postgresUrl(), schema: 'Robert"); DROP' })).rejects.toMatchObject({
      code: 'FLEET_INVALID_ARGUMENT',
      details: { option: 'schema' },
    });
    // Port 1 on loopback: nothing listens there.
    const err = await openStateBackend({
      url: 'postgres://zmcp:s3cret-pw@127.0.0.1:1/zmcp_test?sslmode=disable',
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'FLEET_CONNECT_FAILED', details: { errno: 'ECONNREFUSED' } });
    expect(
      JSON.stringify({ message: (err as Error).message, details: (err as { details: unknown }).details }),
    ).not.toContain('s3cret');
    expect((err as Error).message).toContain('postgres://zmcp@127.0.0.1:1/zmcp_test');
  });

  it('writes no state file under the state directory when the state is in PostgreSQL', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-fleet-dir-'));
    try {
      const b = await backend({ dir });
      expect(b.kind).toBe('postgres');
      await b.store.write(KEY, { count: 1 });
      await b.store.update({ session: 'agent', kind: 'monitor' }, Counter, () => ({ count: 1 }));
      await (await b.store.lock(KEY)).release();
      await (await b.openFilters({ session: 'agent', seed: { streams: ['general'] } })).close();
      expect(await readdir(dir)).toEqual([]);
      await expect(b.openFilters({ session: 'agent', file: join(dir, 'f.json') })).rejects.toMatchObject({
        code: 'FLEET_INVALID_ARGUMENT',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('PostgresStateStore', () => {
  it('stores every kind of state, a hosted server’s tokens and their list included', async () => {
    const b = await backend();
    const account = 'chat.example.com@42';
    const kinds = [
      'monitor',
      'delivery',
      'filters',
      'key',
      'agent',
      'task',
      'sends',
      'token',
      'tokens',
    ] as const;
    for (const kind of kinds)
      await b.store.write({ account, session: 's1', kind }, { count: kinds.indexOf(kind) });
    for (const kind of kinds) {
      expect(await b.store.read({ account, session: 's1', kind }, Counter)).toEqual({
        count: kinds.indexOf(kind),
      });
    }
  });

  it('keeps values as jsonb an operator can query', async () => {
    const b = await backend();
    await b.store.write({ account: 'chat.example.com@42', session: 'agent', kind: 'delivery' }, { count: 3 });
    const row = await sql<{ count: string }>(
      `SELECT value->>'count' AS count FROM "${b.schema}".state WHERE account = $1 AND session = 'agent' AND kind = 'delivery'`,
      ['chat.example.com@42'],
    );
    expect(row.rows).toEqual([{ count: '3' }]);
  });

  it('refuses a value jsonb cannot hold (U+0000) as the caller’s error, keeping the stored one', async () => {
    const b = await backend();
    const Named = z.object({ name: z.string() });
    await b.store.write(KEY, { name: 'ok' });
    await expect(b.store.write(KEY, { name: 'a\u0000b' })).rejects.toMatchObject({
      code: 'DELIVERY_INVALID_ARGUMENT',
      details: { session: 'agent', kind: 'delivery' },
    });
    await expect(b.store.update(KEY, Named, () => ({ name: '\u0000' }))).rejects.toMatchObject({
      code: 'DELIVERY_INVALID_ARGUMENT',
    });
    expect(await b.store.read(KEY, Named)).toEqual({ name: 'ok' });
  });

  it('reports a database it can no longer use as DELIVERY_IO_FAILED naming where the state is', async () => {
    const b = await openTestBackend();
    await b.close();
    const err = await b.store.read(KEY, Counter).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'DELIVERY_IO_FAILED',
      details: { operation: 'read', file: b.locationOf(KEY) },
    });
  });
});

describe('the delivery lock in PostgreSQL', () => {
  it('says who holds it: pid, host and since', async () => {
    const a = await backend();
    const b = await backend({ schema: a.schema });
    const lock = await a.store.lock(KEY);
    const err = await b.store.lock(KEY).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      details: { file: lock.file, pid: process.pid, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
    expect(lock.file).toBe(`${a.location}/agent.delivery.lock`);
    await lock.release();
    await (await b.store.lock(KEY)).release();
  });

  it('is lost when its connection is cut: the holder is told, its writes are refused, and another takes it', async () => {
    const a = await backend();
    const b = await backend({ schema: a.schema });
    const lock = (await a.store.lock(KEY)) as PostgresStateLock;
    await a.store.write(KEY, { count: 1 });
    const lost = new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
    );
    const holders = await sql<{ backend: number }>(
      `SELECT holder_backend AS backend FROM "${a.schema}".locks`,
    );
    // With a timeout it returns once the backend has exited, so its advisory lock is free by then
    // (without one it returns once signalled, and b could find the lock still held).
    await sql('SELECT pg_terminate_backend($1, 30000)', [holders.rows[0]?.backend]);
    expect(await lost).toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      message: expect.stringContaining('was lost'),
    });
    // The process that lost it can no longer write the state it no longer owns.
    await expect(a.store.write(KEY, { count: 2 })).rejects.toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
    await expect(a.store.update(KEY, Counter, () => ({ count: 2 }))).rejects.toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
    });
    const taken = await b.store.lock(KEY);
    await b.store.write(KEY, { count: 3 });
    // Released by its holder, the lost lock stops fencing: the store writes through the pool again.
    await lock.release();
    await taken.release();
    await a.store.write(KEY, { count: 4 });
    expect(await b.store.read(KEY, Counter)).toEqual({ count: 4 });
  });
});

describe('the filters plane in PostgreSQL', () => {
  it('carries a tool’s update to the plane of another process at once, through NOTIFY', async () => {
    const a = await backend();
    const b = await backend({ schema: a.schema });
    const here = await a.openFilters({ session: 'agent', pollIntervalMs: 600_000 });
    const there = await b.openFilters({ session: 'agent', pollIntervalMs: 600_000 });
    const seen = new Promise<FiltersEvent>((resolve) => there.subscribe(resolve));
    await here.update({ mutedStreams: ['random'] });
    expect(await seen).toMatchObject({ kind: 'reloaded', source: 'file' });
    expect(there.filters.document).toEqual({ mutedStreams: ['random'] });
    expect(there.view().location).toBe(a.locationOf({ session: 'agent', kind: 'filters' }));
  });

  it('reads the row again once its listener reconnects, so a change made meanwhile is not lost', async () => {
    const b = await backend();
    const plane = await b.openFilters({ session: 'agent', pollIntervalMs: 600_000 });
    const [listener] = await backendPids('LISTEN%');
    expect(listener).toBeDefined();
    // Cut the listener, then change the row before it is back: no notification reaches it.
    await sql('SELECT pg_terminate_backend($1)', [listener]);
    const reloaded = new Promise<FiltersEvent>((resolve) => plane.subscribe(resolve));
    await sql(
      `UPDATE "${b.schema}".state SET value = '{"streams": ["after"]}' WHERE session = 'agent' AND kind = 'filters'`,
    );
    expect(await reloaded).toMatchObject({ kind: 'reloaded' });
    expect(plane.filters.document).toEqual({ streams: ['after'] });
  });
});

describe('DeliveryEngine on PostgreSQL', () => {
  it('delivers, keeps its watermark in the database, refuses a second engine, and catches up after a restart', async () => {
    const b = await backend();
    const sim = await startZulipSim();
    closing.push(sim);
    const bot = sim.realm.addUser({ fullName: 'Helper Bot', isBot: true });
    const ann = sim.realm.addUser({ fullName: 'Ann Lee' });
    const general = sim.realm.addStream({ name: 'general', subscribers: [bot.userId, ann.userId] });
    const client = new ZulipClient(sim.credentials(bot.userId));
    closing.push(client);
    const account = stateAccount({ site: client.site, userId: bot.userId });
    const accepted: number[] = [];
    let arrived: () => void = () => undefined;
    const sink: DeliverySink = {
      async incoming(batch) {
        for (const item of batch.items) accepted.push(item.messageId);
        arrived();
        return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
      },
      async push(event) {
        for (const item of event.items) accepted.push(item.messageId);
        arrived();
        return { kind: 'answered', accepted: true };
      },
    };
    const filters = await b.openFilters({ account, session: 'agent' });
    const engine = (store = b.store) =>
      new DeliveryEngine({
        client,
        policy: new AccessPolicy({ readOnly: false }),
        store,
        account,
        session: 'agent',
        filters,
        sink,
      });
    const send = (content: string) =>
      sim.realm.sendMessage({ senderId: ann.userId, type: 'stream', stream: 'general', topic: 't', content });

    const first = engine();
    await first.start({ open: ['zulip:general'] });
    let arrival = new Promise<void>((resolve) => (arrived = resolve));
    const one = send('one');
    await arrival;
    expect(accepted).toEqual([one]);
    // A second engine on the same session, from another process's backend, is refused.
    const other = await backend({ schema: b.schema });
    await expect(engine(other.store).start()).rejects.toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
    await first.close();
    const saved = await sql<{ w: string }>(
      `SELECT value->'channels'->$2->>'w' AS w FROM "${b.schema}".state WHERE account = $1 AND session = 'agent' AND kind = 'delivery'`,
      [account, `s${general.streamId}`],
    );
    expect(saved.rows).toEqual([{ w: String(one) }]);

    // Sent while no engine runs: the next one, from the other backend, catches up from the watermark.
    const two = send('two');
    const three = send('three');
    const second = engine(other.store);
    arrival = new Promise<void>((resolve) => (arrived = resolve));
    await second.start();
    await arrival;
    expect(accepted).toEqual([one, two, three]);
    await second.close();
  });
});
