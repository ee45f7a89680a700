import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isDeliveryError } from './errors.js';
import { FileStateStore } from './file-state-store.js';
import { MonitorStore } from './monitor-store.js';
import { MemoryStateStore } from './state-store.js';

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('MonitorStore', () => {
  let monitor: MonitorStore;

  beforeEach(() => {
    monitor = new MonitorStore(new MemoryStateStore(), 'my-agent');
  });

  it('starts empty', async () => {
    expect(await monitor.list()).toEqual([]);
  });

  it('keeps the cursors of two accounts (or none) of one session apart', async () => {
    const store = new MemoryStateStore();
    const a = new MonitorStore(store, { session: 'my-agent', account: 'a.example@1' });
    const b = new MonitorStore(store, { session: 'my-agent', account: 'b.example@1' });
    const unscoped = new MonitorStore(store, 'my-agent');
    await a.start(['general']);
    await a.advance('general', 500);
    expect(await b.list()).toEqual([]);
    expect(await unscoped.list()).toEqual([]);
    await b.start(['general']);
    expect(await b.list()).toEqual([{ name: 'general' }]);
    expect(await a.list()).toEqual([{ name: 'general', lastReadId: 500 }]);
    expect(() => new MonitorStore(store, { session: 'my-agent', account: '../up' })).toThrow(
      /invalid state account/,
    );
  });

  it('start adds streams, with ids when known, and lists them by name', async () => {
    expect(await monitor.start(['qa', { name: 'general', streamId: 7 }])).toEqual([
      { name: 'general', streamId: 7 },
      { name: 'qa' },
    ]);
    expect(await monitor.list()).toEqual([{ name: 'general', streamId: 7 }, { name: 'qa' }]);
  });

  it('keeps a name the realm holds as it is, control characters included', async () => {
    const odd = 'ops\u0007 \u001b[31m';
    await monitor.start([{ name: odd, streamId: 9 }]);
    await monitor.advance(odd, 40);
    expect(await monitor.list()).toEqual([{ name: odd, streamId: 9, lastReadId: 40 }]);
  });

  it('advance moves a cursor forward and never backwards', async () => {
    await monitor.start(['qa']);
    expect(await monitor.advance('qa', 100)).toEqual({ name: 'qa', lastReadId: 100 });
    expect(await monitor.advance('qa', 150)).toEqual({ name: 'qa', lastReadId: 150 });
    expect(await monitor.advance('qa', 120)).toEqual({ name: 'qa', lastReadId: 150 });
    expect(await monitor.list()).toEqual([{ name: 'qa', lastReadId: 150 }]);
  });

  it('concurrent advances end at the highest id', async () => {
    await monitor.start(['qa']);
    const ids = [5, 90, 12, 77, 90, 3, 64];
    await Promise.all(ids.map((id) => monitor.advance('qa', id)));
    expect(await monitor.list()).toEqual([{ name: 'qa', lastReadId: 90 }]);
  });

  it('starting a stream again keeps its cursor and records a newly known id', async () => {
    await monitor.start(['qa']);
    await monitor.advance('qa', 40);
    expect(await monitor.start([{ name: 'QA', streamId: 9 }])).toEqual([
      { name: 'qa', streamId: 9, lastReadId: 40 },
    ]);
  });

  it('follows a rename through the stream id', async () => {
    await monitor.start([{ name: 'old-name', streamId: 9 }]);
    await monitor.advance('old-name', 40);
    expect(await monitor.start([{ name: 'new-name', streamId: 9 }])).toEqual([
      { name: 'new-name', streamId: 9, lastReadId: 40 },
    ]);
    expect(await monitor.advance({ name: 'anything', streamId: 9 }, 41)).toEqual({
      name: 'new-name',
      streamId: 9,
      lastReadId: 41,
    });
  });

  it('matches stream names regardless of case, as Zulip does', async () => {
    await monitor.start(['Design']);
    expect(await monitor.advance('design', 5)).toEqual({ name: 'Design', lastReadId: 5 });
    expect(await monitor.stop(['DESIGN'])).toEqual([]);
  });

  it('stop forgets streams and their cursors, ignoring ones not monitored', async () => {
    await monitor.start(['qa', 'dev']);
    await monitor.advance('qa', 10);
    expect(await monitor.stop(['qa', 'never-monitored'])).toEqual([{ name: 'dev' }]);
    expect(await monitor.start(['qa'])).toEqual([{ name: 'dev' }, { name: 'qa' }]);
  });

  it('advancing a stream that is not monitored is DELIVERY_NOT_MONITORED', async () => {
    const err = await caught(monitor.advance('qa', 1));
    expect(isDeliveryError(err, 'DELIVERY_NOT_MONITORED')).toBe(true);
    expect((err as { details: { stream: string } }).details.stream).toBe('qa');
  });

  it.each([
    ['an empty name', () => monitor.start([''])],
    ['an empty name', () => monitor.start([''])],
    ['an over-long name', () => monitor.start(['x'.repeat(201)])],
    ['a fractional stream id', () => monitor.start([{ name: 'qa', streamId: 1.5 }])],
    ['a zero message id', () => monitor.advance('qa', 0)],
    ['a NaN message id', () => monitor.advance('qa', Number.NaN)],
    ['an unsafe message id', () => monitor.advance('qa', 2 ** 60)],
  ])('rejects %s with DELIVERY_INVALID_ARGUMENT', async (_what, op) => {
    await monitor.start(['qa']);
    expect(isDeliveryError(await caught(op()), 'DELIVERY_INVALID_ARGUMENT')).toBe(true);
    expect(await monitor.list()).toEqual([{ name: 'qa' }]);
  });

  it('refuses a bad session id up front', () => {
    expect(() => new MonitorStore(new MemoryStateStore(), '../other')).toThrow(
      expect.objectContaining({ code: 'DELIVERY_INVALID_SESSION_ID' }),
    );
  });
});

describe('MonitorStore on files', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'zmcp-delivery-monitor-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('cursors survive a restart: a second store on the same directory sees them', async () => {
    const before = new MonitorStore(new FileStateStore({ dir }), 'my-agent');
    await before.start(['qa', { name: 'general', streamId: 3 }]);
    await before.advance('qa', 17206924);
    await before.advance('general', 17206925);

    const after = new MonitorStore(new FileStateStore({ dir }), 'my-agent');
    expect(await after.list()).toEqual([
      { name: 'general', streamId: 3, lastReadId: 17206925 },
      { name: 'qa', lastReadId: 17206924 },
    ]);
    expect(await after.advance('qa', 10)).toEqual({ name: 'qa', lastReadId: 17206924 });
    // Another session in the same directory is separate.
    expect(await new MonitorStore(new FileStateStore({ dir }), 'other').list()).toEqual([]);
    expect(JSON.parse(await readFile(join(dir, 'my-agent.json'), 'utf8'))).toEqual({
      version: 1,
      streams: [
        { name: 'qa', lastReadId: 17206924 },
        { name: 'general', streamId: 3, lastReadId: 17206925 },
      ],
    });
  });

  it('reports a corrupt monitor file instead of starting over', async () => {
    const file = join(dir, 'my-agent.json');
    const tampered = JSON.stringify({ version: 1, streams: [{ name: 'qa' }, { name: 'QA' }] });
    await writeFile(file, tampered);
    const monitor = new MonitorStore(new FileStateStore({ dir }), 'my-agent');
    const err = await caught(monitor.list());
    expect(isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')).toBe(true);
    expect((err as Error).message).toMatch(/duplicate stream name/);
    expect(isDeliveryError(await caught(monitor.start(['dev'])), 'DELIVERY_STATE_CORRUPT')).toBe(true);
    expect(await readFile(file, 'utf8')).toBe(tampered);
  });
});
