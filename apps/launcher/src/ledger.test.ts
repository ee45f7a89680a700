import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore, MemoryStateStore, stateAccount } from '@zmcp/delivery';
import { describe, expect, it } from 'vitest';
import { TriggerLedger } from './ledger.js';
import type { StoredTrigger } from './triggers.js';

function trigger(id: number): StoredTrigger {
  return {
    messageId: id,
    kind: 'stream',
    conversation: `stream:1:t${id}`,
    streamId: 1,
    stream: 'general',
    topic: `t${id}`,
    senderId: 5,
    senderEmail: 'ann@example.test',
    senderName: 'Ann',
    timestamp: 1,
  };
}

describe('TriggerLedger', () => {
  it('keeps triggers and the catch-up point on disk, written before it resolves', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zulip-agent-ledger-'));
    try {
      const store = new FileStateStore({ dir });
      const { ledger, fresh } = await TriggerLedger.open(store, 'agent-a');
      expect(fresh).toBe(true);
      await ledger.add(trigger(10), 'queued');
      await ledger.add(trigger(12), 'running', { runId: '12-abc', backend: 'claude' });
      await ledger.update(12, { pid: 4321 });
      await ledger.advance(20);
      await ledger.advance(15); // never backwards

      const again = await TriggerLedger.open(new FileStateStore({ dir }), 'agent-a');
      expect(again.fresh).toBe(false);
      expect(again.ledger.lastMessageId).toBe(20);
      expect(again.ledger.active().map((r) => [r.trigger.messageId, r.status, r.pid])).toEqual([
        [10, 'queued', undefined],
        [12, 'running', 4321],
      ]);
      const file = JSON.parse(await readFile(join(dir, 'agent-a.json'), 'utf8')) as { version: number };
      expect(file.version).toBe(1);
      // Another launcher id is another record.
      expect((await TriggerLedger.open(store, 'agent-b')).fresh).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps every unfinished trigger and the newest 1000 finished ones', async () => {
    const store = new MemoryStateStore();
    const { ledger } = await TriggerLedger.open(store, 'x');
    await ledger.add(trigger(1), 'queued');
    for (let id = 2; id <= 1003; id++) await ledger.add(trigger(id), 'done');
    const { ledger: back } = await TriggerLedger.open(store, 'x');
    expect(back.get(1)?.status).toBe('queued');
    expect(back.get(2)).toBeUndefined();
    expect(back.get(3)).toBeUndefined();
    expect(back.get(4)?.status).toBe('done');
    expect(back.get(1003)?.status).toBe('done');
    expect(back.lastMessageId).toBe(1003);
  });

  it('keeps each realm and bot’s record apart, and moves one an earlier version kept unkeyed under the first account', async () => {
    const store = new MemoryStateStore();
    const realmA = stateAccount({ site: 'https://a.example.com', userId: 21 });
    const realmB = stateAccount({ site: 'https://b.example.com', userId: 21 });
    const a = await TriggerLedger.open(store, 'agent', { account: realmA });
    expect(a.fresh).toBe(true);
    await a.ledger.add(trigger(40), 'queued');
    // Another realm (or bot) with the same launcher id starts from nothing.
    expect((await TriggerLedger.open(store, 'agent', { account: realmB })).fresh).toBe(true);

    // An earlier version's record, kept without an account.
    const earlier = await TriggerLedger.open(store, 'old');
    await earlier.ledger.add(trigger(7), 'queued');
    await earlier.ledger.advance(9);
    const taken = await TriggerLedger.open(store, 'old', { account: realmA });
    expect(taken.fresh).toBe(false);
    expect(taken.ledger.lastMessageId).toBe(9);
    expect(taken.ledger.active().map((r) => r.trigger.messageId)).toEqual([7]);
    // Moved, not copied: no other account takes it over again.
    expect((await TriggerLedger.open(store, 'old')).fresh).toBe(true);
    expect((await TriggerLedger.open(store, 'old', { account: realmB })).fresh).toBe(true);
    expect((await TriggerLedger.open(store, 'old', { account: realmA })).ledger.lastMessageId).toBe(9);
  });

  it('refuses a corrupt record instead of starting over', async () => {
    const store = new MemoryStateStore();
    await store.write({ session: 'x', kind: 'monitor' }, { version: 2, triggers: 'no' });
    await expect(TriggerLedger.open(store, 'x')).rejects.toMatchObject({ code: 'DELIVERY_STATE_CORRUPT' });
  });
});
