import type { DeliveryProgress, DeliverySnapshot } from '@zmcp/delivery';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { ToolCallObservation } from '../mcp-server.js';
import type { OperatorConsole, ProgressTask } from './console.js';
import { type Html, html } from './html.js';

// The panels more than one bin shows, written once: tool calls (every MCP server observes them
// through createToolServer's `observe`) and delivery (every bin that runs a DeliveryEngine).

function ago(ms: number | undefined, now: number): string {
  if (ms === undefined) return 'never';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`;
}

function seconds(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** A label value kept to a bounded set: past `limit` distinct values, `other`. */
function boundedLabel(seen: Set<string>, value: string, limit: number): string {
  if (seen.has(value)) return value;
  if (seen.size >= limit) return 'other';
  seen.add(value);
  return value;
}

const SAMPLES_PER_TOOL = 512;
const RECENT_CLIENTS = 20;

interface ToolFigures {
  calls: number;
  errors: number;
  samples: number[];
  next: number;
}

/**
 * Adds the "Tool calls" panel (recent clients with their era, calls per tool with errors and
 * latency percentiles, errors by code) and its metrics (`zmcp_tool_calls_total`,
 * `zmcp_tool_errors_total`, `zmcp_tool_call_duration_seconds`) to `console`; returns the
 * `observe` hook to give every `createToolServer` of the process.
 */
export function addToolCallPanel(console: OperatorConsole): (call: ToolCallObservation) => void {
  const now = () => Date.now();
  const tools = new Map<string, ToolFigures>();
  const codes = new Map<string, number>();
  const clients = new Map<string, { era: string; client: string; lastSeen: number; calls: number }>();
  const toolLabels = new Set<string>();
  const clientLabels = new Set<string>();
  const codeLabels = new Set<string>();
  const calls = new Counter({
    name: 'zmcp_tool_calls_total',
    help: 'MCP tool calls answered, by tool, protocol era, client and outcome.',
    labelNames: ['tool', 'era', 'client', 'outcome'],
    registers: [console.metrics],
  });
  const errors = new Counter({
    name: 'zmcp_tool_errors_total',
    help: 'MCP tool calls that failed, by error code.',
    labelNames: ['code'],
    registers: [console.metrics],
  });
  const latency = new Histogram({
    name: 'zmcp_tool_call_duration_seconds',
    help: 'How long MCP tool calls took, by tool.',
    labelNames: ['tool'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [console.metrics],
  });

  console.addPanel({
    id: 'tool-calls',
    title: 'Tool calls',
    render(): Html {
      const t = now();
      const recent = [...clients.values()].sort((a, b) => b.lastSeen - a.lastSeen);
      const toolRows = [...tools.entries()]
        .sort((a, b) => b[1].calls - a[1].calls)
        .map(([name, f]) => {
          const sorted = [...f.samples].sort((a, b) => a - b);
          const ms = (p: number) => `${Math.round(percentile(sorted, p))} ms`;
          return html`<tr><td>${name}</td><td class="num">${f.calls}</td><td class="num">${f.errors}</td><td class="num">${ms(50)}</td><td class="num">${ms(95)}</td><td class="num">${ms(99)}</td></tr>`;
        });
      const codeRows = [...codes.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([code, n]) => html`<tr><td>${code}</td><td class="num">${n}</td></tr>`);
      return html`<h3>Recent clients</h3>${
        recent.length === 0
          ? html`<p class="muted">No tool call yet.</p>`
          : html`<table><thead><tr><th>Client</th><th>Era</th><th>Calls</th><th>Last call</th></tr></thead><tbody>${recent.map(
              (c) =>
                html`<tr><td>${c.client}</td><td>${c.era === 'modern' ? '2026-07-28' : '2025'}</td><td class="num">${c.calls}</td><td>${ago(c.lastSeen, t)}</td></tr>`,
            )}</tbody></table>`
      }<h3>Per tool</h3>${
        toolRows.length === 0
          ? html`<p class="muted">None.</p>`
          : html`<table><thead><tr><th>Tool</th><th>Calls</th><th>Errors</th><th>p50</th><th>p95</th><th>p99</th></tr></thead><tbody>${toolRows}</tbody></table>`
      }<h3>Errors by code</h3>${
        codeRows.length === 0
          ? html`<p class="muted">None.</p>`
          : html`<table><thead><tr><th>Code</th><th>Count</th></tr></thead><tbody>${codeRows}</tbody></table>`
      }`;
    },
  });

  return (call) => {
    // A protocol error is often an unknown tool: its name is whatever the client sent.
    const tool = call.outcome === 'protocol-error' ? '(unknown tool)' : call.tool;
    let figures = tools.get(tool);
    if (figures === undefined) {
      figures = { calls: 0, errors: 0, samples: [], next: 0 };
      tools.set(tool, figures);
    }
    figures.calls += 1;
    const failed = call.outcome === 'error' || call.outcome === 'protocol-error';
    if (failed) figures.errors += 1;
    if (figures.samples.length < SAMPLES_PER_TOOL) figures.samples.push(call.durationMs);
    else {
      figures.samples[figures.next] = call.durationMs;
      figures.next = (figures.next + 1) % SAMPLES_PER_TOOL;
    }
    const key = `${call.era}\u0000${call.client}`;
    const client = clients.get(key) ?? { era: call.era, client: call.client, lastSeen: 0, calls: 0 };
    client.lastSeen = now();
    client.calls += 1;
    clients.set(key, client);
    if (clients.size > RECENT_CLIENTS) {
      const oldest = [...clients.entries()].sort((a, b) => a[1].lastSeen - b[1].lastSeen)[0];
      if (oldest !== undefined) clients.delete(oldest[0]);
    }
    const code = failed ? (call.code ?? 'UNKNOWN') : undefined;
    if (code !== undefined) codes.set(code, (codes.get(code) ?? 0) + 1);
    const toolLabel = boundedLabel(toolLabels, tool, 200);
    calls.inc({
      tool: toolLabel,
      era: call.era,
      client: boundedLabel(clientLabels, call.client, 20),
      outcome: call.outcome,
    });
    if (code !== undefined) errors.inc({ code: boundedLabel(codeLabels, code, 100) });
    latency.observe({ tool: toolLabel }, call.durationMs / 1000);
  };
}

/** Options of {@link addDeliveryPanel}. */
export interface DeliveryPanelOptions {
  /** The engine's snapshot now, or `undefined` while none runs (no host connected). */
  snapshot(): DeliverySnapshot | undefined;
  /** Who owns the bot's event queue: `this process` unless a fleet says otherwise. */
  owner?: (() => string) | undefined;
  /** What the panel says while no engine runs. */
  idleText?: string | undefined;
}

/**
 * Adds the "Delivery" panel (per channel: open or closed, watermark, lag, pending, held, missed;
 * the filters plane; the event queue's owner and last event) and its metrics (gauges read at each
 * scrape, labelled by channel id besides realm and bot) to `console`.
 */
export function addDeliveryPanel(console: OperatorConsole, options: DeliveryPanelOptions): void {
  const owner = options.owner ?? (() => 'this process');
  const registers = [console.metrics];
  const perChannel = (
    name: string,
    help: string,
    pick: (c: DeliverySnapshot['channels'][number]) => number,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['channel'],
      registers,
      collect() {
        this.reset();
        for (const c of options.snapshot()?.channels ?? []) this.set({ channel: c.channel.id }, pick(c));
      },
    });
  perChannel(
    'zmcp_delivery_watermark',
    'The message id every deliverable message up to which the host accepted.',
    (c) => c.watermark,
  );
  perChannel(
    'zmcp_delivery_lag_seconds',
    'How long the oldest message not accepted has waited (0: caught up).',
    (c) => c.lagSeconds,
  );
  perChannel(
    'zmcp_delivery_pending_messages',
    'Messages known above the watermark and not accepted yet.',
    (c) => c.pending,
  );
  perChannel(
    'zmcp_delivery_held_messages',
    'Live messages held while the channel reads from history.',
    (c) => c.held,
  );
  perChannel(
    'zmcp_delivery_missed_messages',
    'Ambient messages dropped while the channel was closed, since last cleared.',
    (c) => c.missed,
  );
  perChannel(
    'zmcp_delivery_channel_open',
    '1 when the channel is open (its messages arrive as incoming).',
    (c) => (c.open ? 1 : 0),
  );
  const single = (name: string, help: string, pick: (s: DeliverySnapshot) => number | undefined) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const s = options.snapshot();
        const value = s === undefined ? undefined : pick(s);
        if (value !== undefined) this.set(value);
      },
    });
  single(
    'zmcp_delivery_filters_stale',
    '1 while the filters file is invalid or missing (the last-known-good is in force).',
    (s) => (s.filters.stale ? 1 : 0),
  );
  single(
    'zmcp_delivery_event_queue_last_event_timestamp_seconds',
    'When the last batch of Zulip events arrived.',
    (s) => (s.eventQueue.lastEventAt === undefined ? undefined : s.eventQueue.lastEventAt / 1000),
  );
  single(
    'zmcp_delivery_event_queue_reregistrations',
    'Event-queue re-registrations after an expiry, since the engine started.',
    (s) => s.eventQueue.reRegistrations,
  );
  single(
    'zmcp_delivery_accepted',
    'Items the host accepted since the engine started.',
    (s) => s.totals.accepted,
  );
  single(
    'zmcp_delivery_not_accepted',
    'Offers the host did not accept since the engine started.',
    (s) => s.totals.notAccepted,
  );
  single(
    'zmcp_delivery_dropped',
    'Ambient messages of closed channels dropped since the engine started.',
    (s) => s.totals.dropped,
  );

  console.addPanel({
    id: 'delivery',
    title: 'Delivery',
    render(): Html {
      const s = options.snapshot();
      if (s === undefined)
        return html`<p class="muted">${options.idleText ?? 'No delivery engine runs.'}</p>`;
      const now = Date.now();
      const state =
        s.status.state === 'running'
          ? html`<span class="ok">running</span>`
          : html`<span class="bad">${s.status.state}${s.status.code === undefined ? '' : ` (${s.status.code})`}</span>`;
      const filters = s.filters.stale
        ? html`<span class="bad">stale</span> since ${ago(s.filters.since, now)}${s.filters.staleReason === undefined ? '' : html`: ${s.filters.staleReason}`}`
        : html`<span class="ok">valid</span> since ${ago(s.filters.since, now)}`;
      const rows = s.channels.map((c) => {
        const lag =
          c.lagSeconds > 0 || c.pending > 0 || c.recovering
            ? html`<span class="warn">${seconds(c.lagSeconds)} behind${c.recovering ? ', reading history' : ''}</span>`
            : html`<span class="ok">caught up</span>`;
        return html`<tr><td>${c.name}</td><td>${c.open ? 'open' : c.refused ? 'refused' : 'closed'}${c.muted ? ', muted' : ''}</td><td class="num">${c.watermark}</td><td>${lag}</td><td class="num">${c.pending}</td><td class="num">${c.held}</td><td class="num">${c.missed}</td></tr>`;
      });
      return html`<dl>
<dt>Engine</dt><dd>${state}; Zulip's newest message id ${s.head}</dd>
<dt>Event queue</dt><dd>owner: ${owner()}; last event ${ago(s.eventQueue.lastEventAt, now)}; registered ${ago(s.eventQueue.registeredAt, now)}; ${s.eventQueue.reRegistrations} re-registrations</dd>
<dt>Filters</dt><dd>${filters}; revision ${s.filters.revision}, digest <code>${s.filters.digest}</code> (${s.filters.location})</dd>
<dt>Totals</dt><dd>${s.totals.accepted} accepted, ${s.totals.notAccepted} offers not accepted, ${s.totals.dropped} ambient dropped</dd>
</dl>${
        rows.length === 0
          ? html`<p class="muted">No channel.</p>`
          : html`<table><thead><tr><th>Channel</th><th>State</th><th>Watermark</th><th>Lag</th><th>Pending</th><th>Held</th><th>Missed</th></tr></thead><tbody>${rows}</tbody></table>`
      }`;
    },
  });
}

/**
 * The `onProgress` option of a `DeliveryEngine` that shows its catch-up sweep and re-registration
 * sweeps on `console` (page, and stderr on a terminal).
 */
export function deliveryProgress(console: OperatorConsole): (progress: DeliveryProgress) => void {
  const tasks = new Map<string, ProgressTask>();
  return (p) => {
    const key = `${p.work}:${p.afterId}:${p.throughId}`;
    let task = tasks.get(key);
    if (task === undefined) {
      task = console.progress(
        p.work,
        p.work === 'catch-up' ? 'catch-up sweep after downtime' : 're-registration after a queue expiry',
      );
      tasks.set(key, task);
    }
    const span = Math.max(1, p.throughId - p.afterId);
    task.update({
      done: Math.max(0, Math.min(span, p.reachedId - p.afterId)),
      total: span,
      unit: 'ids',
      note: `(${p.messages} messages read)`,
    });
    if (p.outcome !== undefined) {
      task.end(p.outcome);
      tasks.delete(key);
    }
  };
}
