// The tools on a Zulip 11.0 realm (feature level 421) and a Zulip 13.0-dev realm (512): the same
// answers, in fewer requests where the newer API allows them, and the newer features used only
// where the realm has them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { checkedOk } from './call.js';
import { type Harness, startHarness } from './harness.js';

const LEVELS = [421, 512] as const;
type Level = (typeof LEVELS)[number];

// "Now" is 2026-09-14 12:00 UTC; the log has one message an hour for the 300 hours before it.
const NOW = Date.UTC(2026, 8, 14, 12, 0, 0);
const HOUR = 3600;
const LOG = 300;

const realms = {} as Record<Level, Harness>;

beforeAll(async () => {
  for (const level of LEVELS) {
    const h = await startHarness({ now: () => NOW, sim: { zulipFeatureLevel: level, now: () => NOW } });
    for (let i = 0; i < LOG; i++) {
      h.sim.realm.sendMessage({
        senderId: i % 2 === 0 ? h.realm.ann.userId : h.realm.bo.userId,
        type: 'stream',
        stream: 'general',
        topic: 'log',
        content: `entry ${i}`,
        timestamp: NOW / 1000 - (LOG - i) * HOUR,
      });
    }
    realms[level] = h;
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(Object.values(realms).map((h) => h.close()));
});

/** Runs a tool call and counts the requests it made (after a warm-up call filled the directory). */
async function counted(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<{ result: ToolCallOutcome; requests: { method: string; path: string; params: Record<string, unknown> }[] }> {
  await h.call(name, args);
  const mark = h.sim.requests.length;
  const result = await h.call(name, args);
  return { result, requests: h.sim.requests.slice(mark) };
}

/** The text of a result with the realm's own ids and site taken out, for comparing two realms. */
function comparable(h: Harness, text: string): string {
  return text.replaceAll(h.sim.url, 'SITE').replace(/id=\d+|ids? \d+(–\d+)?/g, 'id');
}

describe('natural-date reads', () => {
  it.each([
    ['get_channel_history', { stream: 'general', when: '2026-09-05' }],
    ['get_channel_history', { stream: 'general', topic: 'log', when: '2026-09-02..2026-09-03', limit: 30 }],
    ['search_messages', { query: 'entry', stream: 'general', when: '2026-09-10' }],
  ] as const)('%s %j: the same page on both realms, from the date anchor where it exists', async (name, args) => {
    const runs = {} as Record<Level, { text: string; data: Record<string, unknown>; requests: number; anchors: number }>;
    for (const level of LEVELS) {
      const h = realms[level];
      const { result, requests } = await counted(h, name, args);
      const { text, structured } = checkedOk(h.tools, name, result);
      const reads = requests.filter((r) => r.path === '/api/v1/messages');
      runs[level] = {
        text: comparable(h, text),
        data: { ...structured, ids: (structured.ids as number[]).length, next_cursor: undefined },
        requests: requests.length,
        anchors: reads.filter((r) => r.params.anchor === 'date').length,
      };
    }
    expect(runs[512].text).toBe(runs[421].text);
    expect(runs[512].data).toEqual(runs[421].data);
    expect(runs[512].text).toMatch(/\d+ (messages|matches)/);
    expect(runs[512]).toMatchObject({ requests: 1, anchors: 1 });
    expect(runs[421].anchors).toBe(0);
    expect(runs[421].requests).toBeGreaterThan(runs[512].requests);
  });
});
