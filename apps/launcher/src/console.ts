import { permalink } from '@zmcp/core';
import { type Html, html, type OperatorConsole, type ProgressTask } from '@zmcp/server-kit';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Launcher, LauncherEvent } from './launcher.js';
import type { TriggerInfo } from './triggers.js';

// The launcher's panels on the operator console: the agents running, the queue, recent triggers
// and how each ended, and the messages it did not act on; with their metrics, and the catch-up
// reads as long work.

const RECENT = 20;

interface Recent {
  at: number;
  trigger: TriggerInfo;
  action: string;
  /** How the run ended, once it has. */
  end?: { outcome: string; reason: string | undefined; durationMs: number; backend: string };
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function conversation(t: TriggerInfo): string {
  return t.kind === 'stream' ? `#${t.stream ?? t.streamId} > ${t.topic ?? ''}` : `DM (${t.senderName})`;
}

function linkOf(site: string, t: TriggerInfo): string | undefined {
  try {
    return t.kind === 'stream' && t.streamId !== undefined
      ? permalink(site, {
          streamId: t.streamId,
          streamName: t.stream,
          topic: t.topic,
          messageId: t.messageId,
        })
      : permalink(site, { dmUserIds: [...(t.dmUserIds ?? [t.senderId])], messageId: t.messageId });
  } catch {
    return undefined;
  }
}

function conversationCell(site: string, t: TriggerInfo): Html {
  const href = linkOf(site, t);
  return href === undefined
    ? html`${conversation(t)}`
    : html`<a href="${href}" rel="noreferrer noopener" target="_blank">${conversation(t)}</a>`;
}

/** What `zulip-agent` gives the console: its `onEvent` hook, and where its status comes from. */
export interface LauncherConsole {
  /** Every launcher event: recorded for the page and the metrics. */
  onEvent(event: LauncherEvent): void;
  /** The launcher whose status the page shows (set once it started). */
  attach(launcher: Launcher): void;
}

/** Adds the launcher's panels and metrics to `console`; `site` is the realm's URL, for links. */
export function launcherConsole(console: OperatorConsole, site: string): LauncherConsole {
  let launcher: Launcher | undefined;
  const recent: Recent[] = [];
  const ignored = new Map<string, number>();
  const progress = new Map<string, ProgressTask>();
  const registers = [console.metrics];
  new Gauge({
    name: 'zmcp_launcher_agents_running',
    help: 'Agents running now.',
    registers,
    collect() {
      this.set(launcher?.status().running.length ?? 0);
    },
  });
  new Gauge({
    name: 'zmcp_launcher_queue_length',
    help: 'Triggers waiting for a slot.',
    registers,
    collect() {
      this.set(launcher?.status().queued.length ?? 0);
    },
  });
  const triggers = new Counter({
    name: 'zmcp_launcher_triggers_total',
    help: 'Triggers, by what the launcher did with each (start, queue, followup, merge, refuse).',
    labelNames: ['action'],
    registers,
  });
  const runs = new Counter({
    name: 'zmcp_launcher_runs_total',
    help: 'Agent runs ended, by backend and outcome (done, failed, timeout, stopped).',
    labelNames: ['backend', 'outcome'],
    registers,
  });
  const durations = new Histogram({
    name: 'zmcp_launcher_run_duration_seconds',
    help: 'How long agent runs took, by backend.',
    labelNames: ['backend'],
    buckets: [10, 30, 60, 120, 300, 600, 1200, 1800, 3600],
    registers,
  });
  const ignoredTotal = new Counter({
    name: 'zmcp_launcher_ignored_total',
    help: 'Messages the launcher did not act on, by reason.',
    labelNames: ['reason'],
    registers,
  });

  const remember = (entry: Recent) => {
    recent.unshift(entry);
    if (recent.length > RECENT) recent.pop();
  };

  console.addPanel({
    id: 'agents',
    title: 'Agents',
    render(): Html {
      const now = Date.now();
      const status = launcher?.status();
      if (status === undefined) return html`<p class="muted">Starting.</p>`;
      const running = status.running.map(
        (r) =>
          html`<tr><td>${conversationCell(site, r.trigger)}</td><td>${r.backend}</td><td>${ago(now - r.startedAt)}</td><td>${r.trigger.senderName}</td><td>${r.lastLine ?? ''}</td></tr>`,
      );
      const queued = status.queued.map(
        (t) =>
          html`<tr><td>${conversationCell(site, t)}</td><td>${t.senderName}</td><td>${ago(now - t.timestamp * 1000)}</td></tr>`,
      );
      return html`<h3>Running (${running.length})</h3>${
        running.length === 0
          ? html`<p class="muted">No agent runs.</p>`
          : html`<table><thead><tr><th>Conversation</th><th>Backend</th><th>Elapsed</th><th>Called by</th><th>Last output</th></tr></thead><tbody>${running}</tbody></table>`
      }<h3>Queue (${queued.length})</h3>${
        queued.length === 0
          ? html`<p class="muted">Nothing waits.</p>`
          : html`<table><thead><tr><th>Conversation</th><th>Called by</th><th>Waiting</th></tr></thead><tbody>${queued}</tbody></table>`
      }`;
    },
  });
  console.addPanel({
    id: 'triggers',
    title: 'Recent triggers',
    render(): Html {
      const now = Date.now();
      const rows = recent.map((r) => {
        const ended =
          r.end === undefined
            ? html`<span class="muted">${r.action === 'start' || r.action === 'queue' ? 'running or waiting' : ''}</span>`
            : html`<span class="${r.end.outcome === 'done' ? 'ok' : 'bad'}">${r.end.outcome}</span>${r.end.reason === undefined ? '' : html`: ${r.end.reason}`} (${r.end.backend}, ${ago(r.end.durationMs)})`;
        return html`<tr><td>${ago(now - r.at)} ago</td><td>${conversationCell(site, r.trigger)}</td><td>${r.trigger.senderName}</td><td>${r.action}</td><td>${ended}</td></tr>`;
      });
      const notActed = [...ignored.entries()].map(
        ([reason, n]) => html`<tr><td>${reason}</td><td class="num">${n}</td></tr>`,
      );
      return html`${
        rows.length === 0
          ? html`<p class="muted">No trigger since start.</p>`
          : html`<table><thead><tr><th>When</th><th>Conversation</th><th>Called by</th><th>Action</th><th>Ended</th></tr></thead><tbody>${rows}</tbody></table>`
      }<h3>Not acted on</h3>${
        notActed.length === 0
          ? html`<p class="muted">None.</p>`
          : html`<table><thead><tr><th>Reason</th><th>Messages</th></tr></thead><tbody>${notActed}</tbody></table>`
      }`;
    },
  });

  return {
    attach(started) {
      launcher = started;
    },
    onEvent(event) {
      switch (event.type) {
        case 'trigger':
          triggers.inc({ action: event.action });
          // A follow-up or a merge joins a run already listed; a start or queue is a new row.
          remember({ at: Date.now(), trigger: event.trigger, action: event.action });
          return;
        case 'ended': {
          const { end } = event;
          runs.inc({ backend: end.backend, outcome: end.outcome });
          durations.observe({ backend: end.backend }, end.durationMs / 1000);
          const row = recent.find(
            (r) => r.trigger.messageId === end.trigger.messageId && r.end === undefined,
          );
          const summary = {
            outcome: end.outcome,
            reason: end.reason,
            durationMs: end.durationMs,
            backend: end.backend,
          };
          if (row !== undefined) row.end = summary;
          else remember({ at: Date.now(), trigger: end.trigger, action: 'recovered', end: summary });
          return;
        }
        case 'ignored':
          ignored.set(event.reason, (ignored.get(event.reason) ?? 0) + 1);
          ignoredTotal.inc({ reason: event.reason });
          return;
        case 'progress': {
          const key = `${event.work}:${event.afterId}:${event.throughId}`;
          let task = progress.get(key);
          if (task === undefined) {
            task = console.progress(
              event.work,
              event.work === 'catch-up'
                ? 'reading triggers missed while down'
                : 'reading triggers missed during a queue expiry',
            );
            progress.set(key, task);
          }
          const span = Math.max(1, event.throughId - event.afterId);
          task.update({
            done: Math.min(span, Math.max(0, event.reachedId - event.afterId)),
            total: span,
            unit: 'ids',
            note: `(${event.messages} mentions and DMs read)`,
          });
          if (event.outcome !== undefined) {
            task.end(event.outcome);
            progress.delete(key);
          }
          return;
        }
        default:
          return;
      }
    },
  };
}
