import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { errorCode, isLoopbackHost, type Logger } from '@zmcp/core';
import { Gauge, Registry } from 'prom-client';
import { ServerKitError } from '../errors.js';
import { bearerTokenOf, isLoopbackHostHeader, tokenCheck } from '../http-guard.js';
import { CONSOLE_ICON, CONSOLE_SCRIPT, CONSOLE_STYLE } from './assets.js';
import { escapeHtml, type Html, html, joinHtml } from './html.js';

/** One panel of the status page: a title and its rows, rendered on the server at every refresh. */
export interface ConsolePanel {
  /** A short stable id (`delivery`, `agents`): the section's `id` on the page. */
  readonly id: string;
  readonly title: string;
  /** Built with `html`, so every name, topic and message text in it is escaped. */
  render(): Html;
}

/** How far one piece of long work has come. */
export interface ProgressUpdate {
  /** How much is done, in `unit`s. */
  readonly done: number;
  /** How much there is, when known. */
  readonly total?: number | undefined;
  /** What `done` counts (`messages`). */
  readonly unit?: string | undefined;
  /** One short line more (no message text, no names of people). */
  readonly note?: string | undefined;
}

/** One piece of long work on the console: a line on the page and, on a terminal, on stderr. */
export interface ProgressTask {
  update(update: ProgressUpdate): void;
  /** Ends the task; `outcome` defaults to `done`. Later calls are ignored. */
  end(outcome?: string): void;
}

/** Where the fleet's view comes from, when the process runs in one: its processes and queue owners. */
export interface FleetView {
  /** Every process of the fleet (`@zmcp/fleet`'s process registry), oldest first. */
  readonly processes: readonly {
    readonly id: string;
    readonly bin?: string | undefined;
    readonly pid?: number | undefined;
    readonly host?: string | undefined;
    /** ISO times. */
    readonly startedAt?: string | undefined;
    readonly lastSeen?: string | undefined;
    /** Not seen for a while: it died or lost the database. */
    readonly gone?: boolean | undefined;
    /** This process. */
    readonly self?: boolean | undefined;
  }[];
  /** Which process owns each bot's Zulip event queue. */
  readonly queueOwners: readonly { readonly bot: string; readonly owner: string }[];
}

/** Options of {@link OperatorConsole}. */
export interface OperatorConsoleOptions {
  /** The bin, as the page's title names it. */
  bin: string;
  version?: string | undefined;
  /** Every metric is labelled with them: the realm (its host) and the bot (its email). Never message content. */
  labels: { realm: string; bot: string };
  /** A progress line goes here for each update, when it is a terminal (`isTTY`). */
  stderr?: { write(text: string): unknown; isTTY?: boolean | undefined } | undefined;
  /** How often the page refreshes its panels. Default 2000 ms. */
  refreshMs?: number | undefined;
  logger?: Logger | undefined;
  /** The clock. Default `Date.now`. */
  now?: (() => number) | undefined;
  /**
   * Applied to every page, panel and metrics text served, as a last line of defence: the bin's
   * redactor (shared with its logger, so a secret learnt at runtime is hidden here too).
   */
  redact?: ((text: string) => string) | undefined;
}

/** Where {@link OperatorConsole.listen} serves the page. */
export interface ConsoleListenOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default `127.0.0.1`. Anything but loopback requires `token`. */
  host?: string | undefined;
  /** Bearer token every request must carry (or the cookie `?token=` sets). Secret. */
  token?: string | undefined;
}

interface TaskState {
  readonly id: number;
  readonly kind: string;
  readonly title: string;
  readonly started: number;
  last: ProgressUpdate;
  ended?: { at: number; outcome: string };
  printedAt: number;
}

const RECENT_TASKS = 8;
const TTY_GAP_MS = 1000;

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

function describeProgress(u: ProgressUpdate): string {
  const unit = u.unit === undefined ? '' : ` ${u.unit}`;
  const of = u.total === undefined ? '' : `/${u.total}`;
  const pct =
    u.total === undefined || u.total <= 0
      ? ''
      : ` (${Math.floor((100 * Math.min(u.done, u.total)) / u.total)}%)`;
  return `${u.done}${of}${unit}${pct}${u.note === undefined ? '' : ` ${u.note}`}`;
}

/**
 * The operator's console of one process: panels the bin contributes, long work in progress, and
 * metrics (`prom-client`, every series labelled by realm and bot), served when asked by
 * {@link listen} as one small self-refreshing status page and `/metrics` in Prometheus text
 * format. Everything on the page is escaped on the server; no secret is ever put on it.
 */
export class OperatorConsole {
  /** The metrics registry: a bin registers its counters, gauges and histograms here. */
  readonly metrics: Registry;
  readonly labels: { readonly realm: string; readonly bot: string };
  /** The fleet's view, set by a fleet-aware bin; unset: this process runs alone. */
  fleet: FleetView | undefined;
  readonly #o: OperatorConsoleOptions;
  readonly #now: () => number;
  readonly #started: number;
  readonly #panels: ConsolePanel[] = [];
  readonly #tasks: TaskState[] = [];
  readonly #activeTasks: Gauge<'kind'>;
  #nextTask = 1;
  #server: Server | undefined;
  #url: string | undefined;

  constructor(options: OperatorConsoleOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#started = this.#now();
    this.labels = { realm: options.labels.realm, bot: options.labels.bot };
    this.metrics = new Registry();
    this.metrics.setDefaultLabels({ realm: this.labels.realm, bot: this.labels.bot });
    new Gauge({
      name: 'zmcp_process_start_time_seconds',
      help: 'When this process started, in UNIX seconds.',
      labelNames: ['bin', 'version'],
      registers: [this.metrics],
    }).set({ bin: options.bin, version: options.version ?? 'unknown' }, Math.floor(this.#started / 1000));
    this.#activeTasks = new Gauge({
      name: 'zmcp_long_work_active',
      help: 'Long work in progress (catch-up sweeps, re-registrations, large history reads), by kind.',
      labelNames: ['kind'],
      registers: [this.metrics],
    });
  }

  /** The page's address once {@link listen} has bound it. */
  get url(): string | undefined {
    return this.#url;
  }

  readonly #refreshers: (() => Promise<void>)[] = [];

  /**
   * Adds work run before each page, panels or metrics answer (the fleet's view read afresh from
   * its database), so what is served is current; a refresher slower than 1 s is not waited for.
   * Returns a function removing it.
   */
  addRefresher(refresh: () => Promise<void>): () => void {
    this.#refreshers.push(refresh);
    return () => {
      const i = this.#refreshers.indexOf(refresh);
      if (i >= 0) this.#refreshers.splice(i, 1);
    };
  }

  /** Runs the refreshers (errors ignored: the last view stays), waiting at most 1 s. */
  async refresh(): Promise<void> {
    if (this.#refreshers.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.#refreshers.map((r) => r().catch(() => undefined))),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1000);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }

  /** Adds a panel after those added before; returns a function removing it. */
  addPanel(panel: ConsolePanel): () => void {
    this.#panels.push(panel);
    return () => {
      const i = this.#panels.indexOf(panel);
      if (i >= 0) this.#panels.splice(i, 1);
    };
  }

  /**
   * Starts reporting one piece of long work of `kind` (`catch-up`, `re-registration`,
   * `history-read`): shown on the page while it runs and among the last ones after, and on stderr
   * when it is a terminal (at most a line a second, and the end).
   */
  progress(kind: string, title: string): ProgressTask {
    const task: TaskState = {
      id: this.#nextTask++,
      kind,
      title,
      started: this.#now(),
      last: { done: 0 },
      printedAt: 0,
    };
    this.#tasks.push(task);
    this.#activeTasks.inc({ kind });
    this.#trimTasks();
    return {
      update: (update) => {
        if (task.ended !== undefined) return;
        task.last = update;
        const now = this.#now();
        if (now - task.printedAt >= TTY_GAP_MS) {
          task.printedAt = now;
          this.#tty(`${task.title}: ${describeProgress(update)}`);
        }
      },
      end: (outcome = 'done') => {
        if (task.ended !== undefined) return;
        task.ended = { at: this.#now(), outcome };
        this.#activeTasks.dec({ kind });
        this.#tty(
          `${task.title}: ${outcome} (${describeProgress(task.last)}, ${duration(task.ended.at - task.started)})`,
        );
        this.#trimTasks();
      },
    };
  }

  #trimTasks(): void {
    const ended = this.#tasks.filter((t) => t.ended !== undefined);
    for (const t of ended.slice(0, Math.max(0, ended.length - RECENT_TASKS))) {
      this.#tasks.splice(this.#tasks.indexOf(t), 1);
    }
  }

  #tty(line: string): void {
    const stderr = this.#o.stderr;
    if (stderr?.isTTY === true) stderr.write(`${this.#o.bin}: ${line}\n`);
  }

  /** The panels as HTML: the process, long work, then the bin's own. What `/panels` answers. */
  renderPanels(): string {
    return this.#redact(this.#renderPanels());
  }

  #redact(text: string): string {
    return this.#o.redact === undefined ? text : this.#o.redact(text);
  }

  #renderPanels(): string {
    const sections: Html[] = [this.#processPanel(), this.#workPanel()];
    for (const panel of this.#panels) {
      let body: Html;
      try {
        body = panel.render();
      } catch (err) {
        body = html`<p class="bad">This panel failed to render (${errorCode(err) ?? 'error'}).</p>`;
      }
      sections.push(html`<section id="${panel.id}"><h2>${panel.title}</h2>${body}</section>`);
    }
    return joinHtml(sections).html;
  }

  #processPanel(): Html {
    const fleet = this.fleet;
    const fleetRows =
      fleet === undefined
        ? html`<dt>Fleet</dt><dd>none: this process runs alone and owns its event queue, if it has one</dd>`
        : html`<dt>Fleet</dt><dd>${fleet.processes.filter((p) => p.gone !== true).length} processes running${
            fleet.processes.some((p) => p.gone === true)
              ? html`, ${fleet.processes.filter((p) => p.gone === true).length} gone`
              : ''
          }</dd>${fleet.queueOwners.map((q) => html`<dt>Queue of ${q.bot}</dt><dd>owner: ${q.owner}</dd>`)}`;
    const now = this.#now();
    const table =
      fleet === undefined || fleet.processes.length === 0
        ? ''
        : html`<table class="fleet"><thead><tr><th>Bin</th><th>Process</th><th>Started</th><th>Last seen</th><th>State</th></tr></thead><tbody>${fleet.processes.map(
            (p) =>
              html`<tr><td>${p.bin ?? '?'}</td><td>pid ${p.pid ?? '?'} on ${p.host ?? '?'}${p.self === true ? ' (this process)' : ''}</td><td>${p.startedAt ?? '?'}</td><td>${
                p.lastSeen === undefined ? '?' : `${duration(now - Date.parse(p.lastSeen))} ago`
              }</td><td>${p.gone === true ? html`<span class="bad">gone</span>` : html`<span class="ok">running</span>`}</td></tr>`,
          )}</tbody></table>`;
    return html`<section id="process"><h2>Process</h2><dl>
<dt>Realm</dt><dd>${this.labels.realm}</dd>
<dt>Bot</dt><dd>${this.labels.bot}</dd>
<dt>Process</dt><dd>pid ${process.pid} on ${hostname()}, up ${duration(now - this.#started)}</dd>
${fleetRows}</dl>${table}</section>`;
  }

  #workPanel(): Html {
    const now = this.#now();
    const rows = [...this.#tasks].reverse().map((t) => {
      const u = t.last;
      const bar =
        t.ended === undefined && u.total !== undefined && u.total > 0
          ? html` <progress max="${u.total}" value="${Math.min(u.done, u.total)}"></progress>`
          : '';
      const state =
        t.ended === undefined
          ? html`<span class="warn">running ${duration(now - t.started)}</span>`
          : html`<span class="${t.ended.outcome === 'done' ? 'ok' : 'bad'}">${t.ended.outcome}</span> after ${duration(t.ended.at - t.started)}`;
      return html`<tr><td>${t.kind}</td><td>${t.title}</td><td>${describeProgress(u)}${bar}</td><td>${state}</td></tr>`;
    });
    return html`<section id="long-work"><h2>Long work</h2>${
      rows.length === 0
        ? html`<p class="muted">None since start.</p>`
        : html`<table><thead><tr><th>Kind</th><th>What</th><th>Progress</th><th>State</th></tr></thead><tbody>${rows}</tbody></table>`
    }</section>`;
  }

  /** The whole page: header, panels, and the script that refreshes them. */
  renderPage(): string {
    const { bin, version } = this.#o;
    return this.#redact(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`${bin} status`)}</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="console.css">
<script src="console.js" defer></script></head>
<body data-state="live"><header><h1>${escapeHtml(bin)}</h1><span>${escapeHtml(version ?? '')}</span>
<span>${escapeHtml(`${this.labels.bot} on ${this.labels.realm}`)}</span><span>refreshed <span id="refreshed">${escapeHtml(new Date(this.#now()).toLocaleTimeString('en-GB'))}</span></span></header>
<main id="panels" data-refresh-ms="${this.#o.refreshMs ?? 2000}">${this.#renderPanels()}</main></body></html>`);
  }

  /**
   * Serves the page at `/`, its panels at `/panels` and the metrics at `/metrics`, on `options.host`
   * (loopback by default: then the `Host` header must name loopback too). With a token every
   * request carries it as `Authorization: Bearer`, or opens `/?token=…` once, which sets it as an
   * HTTP-only cookie and redirects to `/`. Resolves with the page's URL (never the token).
   *
   * @throws ServerKitError `SERVER_KIT_INVALID_OPTIONS` for a host beyond loopback without a token
   *   or a second call; `SERVER_KIT_LISTEN_FAILED` when the port cannot be bound.
   */
  async listen(options: ConsoleListenOptions): Promise<string> {
    const host = options.host ?? '127.0.0.1';
    const loopback = isLoopbackHost(host);
    if (this.#server !== undefined) {
      throw new ServerKitError('SERVER_KIT_INVALID_OPTIONS', 'the status page is served already', {
        details: { option: 'listen' },
      });
    }
    if (!loopback && options.token === undefined) {
      throw new ServerKitError(
        'SERVER_KIT_INVALID_OPTIONS',
        `the status page needs a token to listen beyond loopback (host ${host})`,
        { details: { option: 'token' } },
      );
    }
    const matches = options.token === undefined ? undefined : tokenCheck(options.token);
    const server = createServer((req, res) => {
      try {
        this.#route(req, res, { loopback, matches });
      } catch (err) {
        this.#o.logger?.warn('status page request failed', { err });
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error');
      }
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((err: unknown) => {
      throw new ServerKitError(
        'SERVER_KIT_LISTEN_FAILED',
        `cannot serve the status page on ${host}:${options.port}`,
        {
          cause: err,
          details: { host, port: options.port },
        },
      );
    });
    this.#server = server;
    const port = (server.address() as AddressInfo).port;
    this.#cookieName = `zmcp_console_${port}`;
    this.#url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;
    return this.#url;
  }

  #cookieName = 'zmcp_console';

  #authorized(req: IncomingMessage, matches: ((presented: string) => boolean) | undefined): boolean {
    if (matches === undefined) return true;
    const bearer = bearerTokenOf(req.headers.authorization);
    if (bearer !== undefined) return matches(bearer);
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === this.#cookieName) {
        return matches(decodeURIComponent(part.slice(eq + 1).trim()));
      }
    }
    return false;
  }

  #route(
    req: IncomingMessage,
    res: ServerResponse,
    guard: { loopback: boolean; matches: ((presented: string) => boolean) | undefined },
  ): void {
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': type,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'content-security-policy':
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ...headers,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(405, 'text/plain; charset=utf-8', 'only GET and HEAD', { allow: 'GET, HEAD' });
      return;
    }
    if (guard.loopback && !isLoopbackHostHeader(req.headers.host)) {
      send(403, 'text/plain; charset=utf-8', 'Forbidden: the Host header is not a loopback name');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const presented = url.searchParams.get('token');
    if (url.pathname === '/' && presented !== null && guard.matches !== undefined) {
      if (!guard.matches(presented)) {
        send(401, 'text/plain; charset=utf-8', 'Unauthorized: a valid token is required');
        return;
      }
      send(303, 'text/plain; charset=utf-8', 'see /', {
        location: '/',
        'set-cookie': `${this.#cookieName}=${encodeURIComponent(presented)}; HttpOnly; SameSite=Strict; Path=/`,
      });
      return;
    }
    if (!this.#authorized(req, guard.matches)) {
      send(401, 'text/plain; charset=utf-8', 'Unauthorized: a valid bearer token is required', {
        'www-authenticate': 'Bearer realm="zmcp status"',
      });
      return;
    }
    const fresh = (answer: () => void) =>
      void this.refresh().then(() => {
        try {
          answer();
        } catch (err) {
          this.#o.logger?.warn('status page request failed', { err });
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('internal error');
        }
      });
    switch (url.pathname) {
      case '/':
        fresh(() => send(200, 'text/html; charset=utf-8', this.renderPage()));
        return;
      case '/panels':
        fresh(() => send(200, 'text/html; charset=utf-8', this.renderPanels()));
        return;
      case '/console.js':
        send(200, 'text/javascript; charset=utf-8', CONSOLE_SCRIPT);
        return;
      case '/console.css':
        send(200, 'text/css; charset=utf-8', CONSOLE_STYLE);
        return;
      case '/favicon.svg':
      case '/favicon.ico':
        send(200, 'image/svg+xml', CONSOLE_ICON);
        return;
      case '/metrics':
        void this.refresh()
          .then(() => this.metrics.metrics())
          .then(
            (text) => send(200, this.metrics.contentType, this.#redact(text)),
            (err: unknown) => {
              this.#o.logger?.warn('metrics collection failed', { err });
              send(500, 'text/plain; charset=utf-8', 'metrics collection failed');
            },
          );
        return;
      default:
        send(404, 'text/plain; charset=utf-8', 'Not found');
    }
  }

  /** Stops serving (open connections are closed); safe to call twice. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#url = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
