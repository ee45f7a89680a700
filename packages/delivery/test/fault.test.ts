import { describe, expect, it } from 'vitest';
import { runFaultSchedule } from '../bench/fault/schedule.js';

// A short schedule; `pnpm --filter @zmcp/delivery bench` runs a long one. FAULT_SEED=<n>
// replays a schedule (the answers and faults; timing still varies).
const seed =
  process.env.FAULT_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FAULT_SEED);

describe('delivery under faults', () => {
  it('every message the host accepts arrives once, in order per channel, and none is lost', async () => {
    const report = await runFaultSchedule({
      seed,
      messages: 250,
      kills: 2,
      expiries: 2,
      restarts: 1,
      deadlineMs: 40_000,
    });
    const summary = `FAULT_SEED=${seed}: ${JSON.stringify({ ...report, violations: undefined })}`;
    expect(report.violations, summary).toEqual([]);
    expect(report.kills, summary).toBe(2);
    expect(report.accepted, summary).toBe(report.expected);
    expect(report.expected, summary).toBeGreaterThan(150);
  }, 60_000);
});
