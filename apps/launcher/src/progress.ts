import { type Conversation, errorCode, inlineCode, type Logger, oneLineText } from '@zmcp/core';
import { postMessage, type ToolServices } from '@zmcp/tools';
import type { BackendName } from './backends.js';

// Live progress of one agent run: one status message in the conversation (elapsed time, the step
// the agent is on, the tools it used), read from the CLI's machine-readable output and updated by
// edits, coalesced, inside the realm's message-edit window (past it, a new message).

/** What one line of a CLI's machine-readable output says about its progress. */
export type ProgressEvent =
  /** A tool call began (its name as the CLI names it). */
  | { kind: 'tool'; name: string }
  /** The model said something: the step it is on. */
  | { kind: 'text'; text: string };

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Claude Code `--output-format stream-json`: `assistant` messages carry text and `tool_use` blocks. */
function claudeEvents(value: Json): ProgressEvent[] {
  if (value.type !== 'assistant' || !isObject(value.message)) return [];
  // A subagent's steps (parent_tool_use_id set) are part of the tool call that started it.
  if (value.parent_tool_use_id !== null && value.parent_tool_use_id !== undefined) return [];
  const content = Array.isArray(value.message.content) ? value.message.content : [];
  const out: ProgressEvent[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    const name = str(block.name);
    const text = str(block.text);
    // `mcp__zulip__reply` reads as Codex names it: `zulip.reply`.
    const mcp = name === undefined ? null : /^mcp__(.+?)__(.+)$/.exec(name);
    if (block.type === 'tool_use' && name !== undefined)
      out.push({ kind: 'tool', name: mcp === null ? name : `${mcp[1]}.${mcp[2]}` });
    else if (block.type === 'text' && text !== undefined && text.trim() !== '')
      out.push({ kind: 'text', text });
  }
  return out;
}

/** Codex `exec --json`: `item.started` of a command, an MCP tool call, a file change, a web search; `item.completed` of a message. */
function codexEvents(value: Json): ProgressEvent[] {
  const item = isObject(value.item) ? value.item : undefined;
  if (item === undefined) return [];
  if (value.type === 'item.started') {
    switch (item.type) {
      case 'command_execution':
        return [{ kind: 'tool', name: 'shell' }];
      case 'mcp_tool_call':
        return [{ kind: 'tool', name: `${str(item.server) ?? '?'}.${str(item.tool) ?? '?'}` }];
      case 'web_search':
        return [{ kind: 'tool', name: 'web_search' }];
      default:
        return [];
    }
  }
  if (value.type === 'item.completed') {
    if (item.type === 'file_change') return [{ kind: 'tool', name: 'apply_patch' }];
    const text = str(item.text);
    if (
      (item.type === 'agent_message' || item.type === 'reasoning') &&
      text !== undefined &&
      text.trim() !== ''
    )
      return [{ kind: 'text', text }];
  }
  return [];
}

/** OpenCode `run --format json`: `tool_use` and `text` events, each with its `part`. */
function opencodeEvents(value: Json): ProgressEvent[] {
  const part = isObject(value.part) ? value.part : undefined;
  if (part === undefined) return [];
  const tool = str(part.tool);
  const text = str(part.text);
  if (value.type === 'tool_use' && tool !== undefined) return [{ kind: 'tool', name: tool }];
  if (value.type === 'text' && text !== undefined && text.trim() !== '') return [{ kind: 'text', text }];
  return [];
}

/** What one stdout line of `backend` says about its progress; nothing for any other line. */
export function readProgressLine(backend: BackendName, line: string): ProgressEvent[] {
  if (!line.startsWith('{')) return [];
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return [];
  }
  if (!isObject(value)) return [];
  switch (backend) {
    case 'claude':
      return claudeEvents(value);
    case 'codex':
      return codexEvents(value);
    case 'opencode':
      return opencodeEvents(value);
  }
}

/** `75` → `1m 15s`. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** How a run ended, as its status message says it. */
export type ProgressOutcome = 'done' | 'failed' | 'timeout' | 'stopped';

/** Options of {@link ProgressReporter}. */
export interface ProgressReporterOptions {
  services: ToolServices;
  to: Conversation;
  /** Shortest time between two edits, in milliseconds (Zulip's rate limits stay far away). */
  intervalMs: number;
  /** The realm's message-edit window in seconds (`realm_message_content_edit_limit_seconds`); null: none. */
  editLimitSeconds: number | null;
  logger: Logger;
  now?: (() => number) | undefined;
}

/** How long before the realm's edit window closes the status moves to a new message. */
const EDIT_MARGIN_MS = 60_000;
/** Most distinct tools a status lists; the rest are counted. */
const TOOLS_SHOWN = 8;

/**
 * The status message of one run: posted at start, edited at most once per `intervalMs` while
 * something changed (or the elapsed time moved on by a minute), and once more at the end.
 * Writes run one at a time; a failed write is logged and the next one tries again.
 */
export class ProgressReporter {
  readonly #o: ProgressReporterOptions;
  readonly #now: () => number;
  readonly #startedAt: number;
  #to: Conversation;
  readonly #tools = new Map<string, number>();
  #step = 'starting';
  #messageId: number | undefined;
  #postedAt = 0;
  #lastWrite = 0;
  #dirty = true;
  #ended: ProgressOutcome | undefined;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();
  /** Every status message posted, in order (a new one past the edit window). */
  readonly messageIds: number[] = [];
  /** How many edits were made. */
  edits = 0;

  constructor(options: ProgressReporterOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#startedAt = this.#now();
    this.#to = options.to;
    this.#enqueue();
    this.#timer = setInterval(() => this.#tick(), Math.max(1, options.intervalMs));
    this.#timer.unref();
  }

  /** The conversation moved (a topic renamed or moved): a status message posted from now on goes there. */
  retarget(to: Conversation): void {
    this.#to = to;
  }

  /** Takes what a line of the CLI's output said. */
  observe(events: readonly ProgressEvent[]): void {
    if (this.#ended !== undefined) return;
    for (const event of events) {
      if (event.kind === 'tool') {
        this.#tools.set(event.name, (this.#tools.get(event.name) ?? 0) + 1);
        this.#step = `using ${inlineCode(event.name, 80)}`;
      } else {
        this.#step = inlineCode(oneLineText(event.text, 120), 120);
      }
      this.#dirty = true;
    }
  }

  /** The last edit: how the run ended; settles when it is written. */
  async finish(outcome: ProgressOutcome): Promise<void> {
    if (this.#ended === undefined) {
      this.#ended = outcome;
      clearInterval(this.#timer);
      this.#dirty = true;
      this.#enqueue();
    }
    await this.#chain;
  }

  /** The status text now. */
  render(): string {
    const elapsed = formatElapsed(this.#now() - this.#startedAt);
    const head =
      this.#ended === undefined
        ? `⏳ Working · ${elapsed}`
        : {
            done: `✅ Done in ${elapsed}`,
            failed: `⚠️ Failed after ${elapsed}`,
            timeout: `⚠️ Stopped at the time limit after ${elapsed}`,
            stopped: `⏹ Stopped after ${elapsed}`,
          }[this.#ended];
    const lines = [head];
    if (this.#ended === undefined) lines.push(`Step: ${this.#step}`);
    const tools = [...this.#tools];
    if (tools.length > 0) {
      const shown = tools
        .slice(0, TOOLS_SHOWN)
        .map(([name, n]) => `${inlineCode(name, 80)}${n > 1 ? ` ×${n}` : ''}`);
      const more = tools.length - shown.length;
      lines.push(`Tools: ${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`);
    }
    return lines.join('\n');
  }

  #tick(): void {
    const now = this.#now();
    if (this.#dirty || now - this.#lastWrite >= 60_000) this.#enqueue();
  }

  #enqueue(): void {
    this.#chain = this.#chain.then(() => this.#write());
  }

  async #write(): Promise<void> {
    const now = this.#now();
    // Coalesced: at most one write per interval, except the first and the last.
    if (this.#messageId !== undefined && this.#ended === undefined) {
      if (now - this.#lastWrite < this.#o.intervalMs) return;
    }
    this.#dirty = false;
    this.#lastWrite = now;
    const text = this.render();
    const limit = this.#o.editLimitSeconds;
    const editable =
      this.#messageId !== undefined &&
      (limit === null || now - this.#postedAt < limit * 1000 - EDIT_MARGIN_MS);
    try {
      if (editable) {
        await this.#o.services.client.updateMessage(
          this.#messageId as number,
          { content: text },
          { timeoutMs: 10_000 },
        );
        this.edits++;
        return;
      }
      const posted = await postMessage(this.#o.services, this.#to, text, {
        overLength: 'refuse',
        signal: AbortSignal.timeout(10_000),
        repeat: true,
      });
      if ('isError' in posted) throw new Error(posted.text);
      this.#messageId = posted.ids[0];
      this.#postedAt = now;
      if (this.#messageId !== undefined) this.messageIds.push(this.#messageId);
    } catch (err) {
      this.#dirty = true;
      this.#o.logger.warn('the progress message was not written', { err: errorCode(err) ?? String(err) });
    }
  }
}
