// The delivery fault schedule of @zmcp/delivery on PostgreSQL, with two processes racing: a
// standby always waits for the session's lock beside the running engine and takes over when it is
// killed (SIGKILL, state writes included), reading the bot's shared event queue, whose owner dies
// with it. Every message the host accepts arrives once, in order per channel, and none is lost.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dropAfterAll, postgresUrl, uniqueSchema } from '../../../test/support/postgres.js';
import { runFaultSchedule } from '../../delivery/bench/fault/schedule.js';

dropAfterAll();

const seed =
  process.env.FAULT_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FAULT_SEED);

describe('delivery under faults on PostgreSQL, two processes racing', () => {
  it('every message the host accepts arrives once, in order per channel, and none is lost', async () => {
    const report = await runFaultSchedule({
      seed,
      messages: 200,
      kills: 2,
      expiries: 1,
      restarts: 1,
      deadlineMs: 45_000,
      standby: true,
      store: {
        module: fileURLToPath(new URL('./fault/pg-store.ts', import.meta.url)),
        options: { url: postgresUrl(), schema: uniqueSchema('soak') },
      },
    });
    const summary = `FAULT_SEED=${seed}: ${JSON.stringify({ ...report, violations: undefined })}`;
    expect(report.violations, summary).toEqual([]);
    expect(report.kills, summary).toBe(2);
    // The first process and a standby for each kill.
    expect(report.epochs, summary).toBeGreaterThanOrEqual(3);
    expect(report.accepted, summary).toBe(report.expected);
    expect(report.expected, summary).toBeGreaterThan(100);
  }, 60_000);
});
