// The panels every bin shares: tool calls (from the observe hook) and delivery (from a
// DeliveryEngine's snapshot), their metrics, and the engine's progress as long work.
import type { DeliverySnapshot } from '@zmcp/delivery';
import { describe, expect, it } from 'vitest';
import { parseMetrics } from '../../../test/support/console.js';
import { addDeliveryPanel, addToolCallPanel, deliveryProgress, OperatorConsole } from '../src/index.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

function makeConsole(lines: string[] = []) {
  return new OperatorConsole({
    bin: 'zulip-test',
    labels: { realm: 'chat.example.test', bot: 'helper@example.test' },
    stderr: { write: (t) => lines.push(t), isTTY: true },
  });
}

function snapshot(over: Partial<DeliverySnapshot> = {}): DeliverySnapshot {
  const now = Date.now();
  return {
    status: {
      state: 'running',
      filtersStale: false,
      channels: 1,
      openChannels: 1,
      queued: 2,
      recovering: 0,
      stateWriteFailures: 0,
    },
    head: 120,
    channels: [
      {
        channel: { id: `zulip:${HOSTILE}`, kind: 'stream', label: `#&lt;img`, streamId: 3, private: false },
        name: `#${HOSTILE}`,
        open: true,
        refused: false,
        muted: false,
        watermark: 100,
        newestId: 120,
        pending: 2,
        lagSeconds: 95,
        held: 1,
        missed: 4,
        recovering: false,
      },
    ],
    filters: {
      stale: true,
      staleReason: 'not JSON',
      since: now - 60_000,
      revision: 3,
      digest: 'abcdef012345',
      location: '/state/f.json',
    },
    eventQueue: { registeredAt: now - 120_000, lastEventAt: now - 5_000, reRegistrations: 1 },
    totals: { accepted: 10, notAccepted: 1, dropped: 4 },
    ...over,
  };
}

describe('addDeliveryPanel', () => {
  it('shows each channel with its lag, the filters plane and the queue owner, names as text', () => {
    const c = makeConsole();
    let current: DeliverySnapshot | undefined;
    addDeliveryPanel(c, { snapshot: () => current, idleText: 'No host is connected.' });
    expect(c.renderPanels()).toContain('No host is connected.');
    current = snapshot();
    const page = c.renderPanels();
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page).not.toContain('<img');
    expect(page).toContain('1m 35s behind');
    expect(page).toContain('<span class="bad">stale</span> since 1m 0s ago: not JSON');
    expect(page).toContain('digest <code>abcdef012345</code>');
    expect(page).toContain('owner: this process; last event 5s ago');
  });

  it('holds the delivery gauges, labelled by channel, realm and bot', async () => {
    const c = makeConsole();
    addDeliveryPanel(c, { snapshot: () => snapshot() });
    const families = parseMetrics(await c.metrics.metrics());
    const labels = { channel: `zulip:${HOSTILE}`, realm: 'chat.example.test', bot: 'helper@example.test' };
    expect(families.get('zmcp_delivery_lag_seconds')?.samples).toEqual([{ labels, value: 95 }]);
    expect(families.get('zmcp_delivery_watermark')?.samples).toEqual([{ labels, value: 100 }]);
    expect(families.get('zmcp_delivery_held_messages')?.samples[0]?.value).toBe(1);
    expect(families.get('zmcp_delivery_missed_messages')?.samples[0]?.value).toBe(4);
    expect(families.get('zmcp_delivery_filters_stale')?.samples[0]?.value).toBe(1);
    expect(families.get('zmcp_delivery_event_queue_reregistrations')?.samples[0]?.value).toBe(1);
  });

  it('shows the engine’s sweeps as long work, on the page and on a terminal', () => {
    const lines: string[] = [];
    const c = makeConsole(lines);
    const report = deliveryProgress(c);
    report({ work: 're-registration', afterId: 100, throughId: 300, reachedId: 100, messages: 0 });
    report({ work: 're-registration', afterId: 100, throughId: 300, reachedId: 200, messages: 40 });
    expect(c.renderPanels()).toContain('re-registration after a queue expiry');
    report({
      work: 're-registration',
      afterId: 100,
      throughId: 300,
      reachedId: 300,
      messages: 80,
      outcome: 'done',
    });
    expect(c.renderPanels()).toContain('<span class="ok">done</span>');
    expect(lines.at(-1)).toMatch(
      /^zulip-test: re-registration after a queue expiry: done \(200\/200 ids \(100%\) \(80 messages read\)/,
    );
  });
});

describe('addToolCallPanel', () => {
  it('shows clients, calls per tool with percentiles and errors by code; hostile names as text', async () => {
    const c = makeConsole();
    const observe = addToolCallPanel(c);
    for (let i = 1; i <= 100; i++) {
      observe({ tool: 'fetch_history', era: 'modern', client: HOSTILE, outcome: 'ok', durationMs: i });
    }
    observe({
      tool: 'send_message',
      era: 'legacy',
      client: 'claude-code',
      outcome: 'error',
      code: 'TOOLS_ACCESS_DENIED',
      durationMs: 5,
    });
    observe({
      tool: HOSTILE,
      era: 'legacy',
      client: 'claude-code',
      outcome: 'protocol-error',
      code: 'TOOLS_UNKNOWN_TOOL',
      durationMs: 1,
    });
    const page = c.renderPanels();
    expect(page).not.toContain('<img');
    expect(page).toMatch(
      /<td>&lt;img src=x onerror=alert\(1\)&gt;<\/td><td>2026-07-28<\/td><td class="num">100<\/td>/,
    );
    expect(page).toContain(
      '<td>fetch_history</td><td class="num">100</td><td class="num">0</td><td class="num">51 ms</td><td class="num">96 ms</td><td class="num">100 ms</td>',
    );
    expect(page).toContain('<td>TOOLS_ACCESS_DENIED</td><td class="num">1</td>');
    // An unknown tool's name is whatever the client sent: it is not a label.
    expect(page).toContain('(unknown tool)');
    const text = await c.metrics.metrics();
    const families = parseMetrics(text);
    const calls = families.get('zmcp_tool_calls_total')?.samples ?? [];
    expect(calls.find((s) => s.labels.tool === '(unknown tool)')?.labels.outcome).toBe('protocol-error');
    expect(calls.some((s) => s.labels.tool === HOSTILE)).toBe(false);
    expect(families.get('zmcp_tool_errors_total')?.samples.map((s) => [s.labels.code, s.value])).toEqual([
      ['TOOLS_ACCESS_DENIED', 1],
      ['TOOLS_UNKNOWN_TOOL', 1],
    ]);
    const histogram = families.get('zmcp_tool_call_duration_seconds');
    expect(histogram?.type).toBe('HISTOGRAM');
    // The parser keeps a histogram's buckets, not its labelled counts: those are read as written.
    expect(text).toMatch(/^zmcp_tool_call_duration_seconds_count\{[^}]*tool="fetch_history"[^}]*\} 100$/m);
  });
});
