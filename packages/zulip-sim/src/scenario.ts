// Recording the requests a simulator served (JSON lines, no API keys) and replaying them against a
// fresh realm built from the same seed, comparing each answer. Used by the CLI.
import { createWriteStream, type WriteStream } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { startDemoSim } from './demo.js';
import { SimError } from './errors.js';
import { parseSeed, type SimSeed, seedOptions } from './seed.js';
import { startZulipSim } from './sim.js';
import type { SimRequestRecord, ZulipSim } from './types.js';

/** The first line of a recording: how to build the realm again. */
export interface RecordingHeader {
  type: 'header';
  format: 'zulip-sim-recording';
  version: 1;
  /** The simulator's URL while recording (replaced by `{site}` when comparing). */
  site: string;
  zulipFeatureLevel: number;
  zulipVersion: string;
  /** The seed, API keys removed; `null` for the demo realm. */
  seed: SimSeed | null;
}

/** One served request. */
export interface RecordedRequest {
  type: 'request';
  seq: number;
  method: string;
  path: string;
  /** The delivery email of the authenticated user, or null. */
  user: string | null;
  userAgent?: string;
  params: Record<string, unknown>;
  status: number;
  response?: unknown;
  fault?: true;
  /** `Date.now()` when the request arrived. */
  time: number;
}

/** A seed without its API keys (recordings never hold credentials). */
export function withoutSecrets(seed: SimSeed): SimSeed {
  return {
    ...seed,
    ...(seed.users ? { users: seed.users.map(({ apiKey: _k, ...u }) => u) } : {}),
    ...(seed.bots ? { bots: seed.bots.map(({ apiKey: _k, ...b }) => b) } : {}),
  };
}

/** Appends every request `sim` serves to `file` as JSON lines; resolves the returned `stop` once flushed. */
export function recordTo(sim: ZulipSim, file: string, seed: SimSeed | null): { stop(): Promise<void> } {
  const out: WriteStream = createWriteStream(file, { flags: 'w', mode: 0o600 });
  const header: RecordingHeader = {
    type: 'header',
    format: 'zulip-sim-recording',
    version: 1,
    site: sim.url,
    zulipFeatureLevel: sim.zulipFeatureLevel,
    zulipVersion: sim.zulipVersion,
    seed: seed === null ? null : withoutSecrets(seed),
  };
  out.write(`${JSON.stringify(header)}\n`);
  let seq = 0;
  const unsubscribe = sim.onRequest(
    (r: SimRequestRecord) => {
      const line: RecordedRequest = {
        type: 'request',
        seq: seq++,
        method: r.method,
        path: r.path,
        user: r.userId === null ? null : (sim.realm.user(r.userId)?.deliveryEmail ?? null),
        ...(r.userAgent === undefined ? {} : { userAgent: r.userAgent }),
        params: { ...r.params },
        status: r.status,
        ...(r.response === undefined ? {} : { response: r.response }),
        ...(r.fault ? { fault: true as const } : {}),
        time: r.time,
      };
      out.write(`${JSON.stringify(line)}\n`);
    },
    { responses: true },
  );
  return {
    stop: () =>
      new Promise<void>((resolve, reject) => {
        unsubscribe();
        out.end((err?: Error | null) => (err ? reject(err) : resolve()));
      }),
  };
}

/** Parses a recording's lines.
 * @throws SimError `SIM_BAD_SEED` naming the line that is not a recording line. */
export function parseRecording(text: string): { header: RecordingHeader; requests: RecordedRequest[] } {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const parse = (line: string, n: number): Record<string, unknown> => {
    try {
      const v = JSON.parse(line) as unknown;
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, unknown>;
    } catch (error) {
      throw new SimError('SIM_BAD_SEED', `recording line ${n}: not a JSON object`, {
        details: { field: `line ${n}` },
        cause: error,
      });
    }
  };
  const head = parse(lines[0] ?? '', 1);
  if (head.type !== 'header' || head.format !== 'zulip-sim-recording' || head.version !== 1) {
    throw new SimError('SIM_BAD_SEED', 'recording line 1: not a zulip-sim recording header', {
      details: { field: 'line 1' },
    });
  }
  const header = head as unknown as RecordingHeader;
  if (header.seed !== null) header.seed = parseSeed(header.seed);
  const requests = lines.slice(1).map((line, i) => {
    const r = parse(line, i + 2);
    if (r.type !== 'request' || typeof r.method !== 'string' || typeof r.path !== 'string') {
      throw new SimError('SIM_BAD_SEED', `recording line ${i + 2}: not a request line`, {
        details: { field: `line ${i + 2}` },
      });
    }
    return r as unknown as RecordedRequest;
  });
  return { header, requests };
}

/** What a replay found. */
export interface ReplayReport {
  total: number;
  matched: number;
  /** Requests answered by an injected fault when recorded: not replayed. */
  skipped: number;
  mismatches: {
    seq: number;
    method: string;
    path: string;
    where: string;
    recorded: unknown;
    replayed: unknown;
  }[];
}

const VOLATILE = new Set([
  'queue_id',
  'timestamp',
  'date_created',
  'date_joined',
  'edit_timestamp',
  'last_edit_timestamp',
  'last_moved_timestamp',
  'create_time',
  'date_sent',
  'retry-after',
]);

/** The comparable form of an answer: no timing, queue ids, heartbeats, event ids, site or upload paths. */
export function normalize(value: unknown, site: string): unknown {
  if (typeof value === 'string') {
    return value
      .split(site)
      .join('{site}')
      .replace(/\/user_uploads\/temporary\/[^\s"')\]]+/g, '/user_uploads/temporary/{token}')
      .replace(/\/user_uploads\/\d+\/[0-9a-f]{1,2}\/[A-Za-z0-9_-]+\//g, '/user_uploads/{path}/')
      .replace(/(^|[^/])\b\d+\/[0-9a-f]{1,2}\/[A-Za-z0-9_-]{24}\//g, '$1{path}/');
  }
  if (Array.isArray(value)) return value.map((v) => normalize(v, site));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (VOLATILE.has(k)) continue;
      if (k === 'events' && Array.isArray(v)) {
        out[k] = v
          .filter((e) => (e as { type?: unknown })?.type !== 'heartbeat')
          .map((e) => {
            const { id: _id, ...rest } = e as Record<string, unknown>;
            return normalize(rest, site);
          });
        continue;
      }
      out[k] = normalize(v, site);
    }
    return out;
  }
  return value;
}

function firstDifference(a: unknown, b: unknown, where = ''): string {
  if (isDeepStrictEqual(a, b)) return '';
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDifference(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        Array.isArray(a) ? `${where}[${k}]` : `${where}.${k}`,
      );
      if (d) return d;
    }
  }
  return where || '(value)';
}

function realEvents(response: unknown): Record<string, unknown>[] {
  const events = (response as { events?: unknown })?.events;
  if (!Array.isArray(events)) return [];
  return events.filter((e) => (e as { type?: unknown })?.type !== 'heartbeat') as Record<string, unknown>[];
}

/**
 * Replays a recording: a fresh realm from the header's seed (or the demo realm) at the recorded
 * feature level, rate limits off, then every recorded request in order, one at a time, as the
 * same user (by email). Queue ids and event ids are mapped to the new ones; a `GET /events` whose
 * recorded answer held no events (only heartbeats, or a timeout) is sent with `dont_block=true`;
 * requests answered by an injected fault are skipped; uploads are re-sent with placeholder bytes
 * of the recorded size. Each answer is compared with the recorded one after {@link normalize}.
 */
export async function replay(recording: {
  header: RecordingHeader;
  requests: RecordedRequest[];
}): Promise<ReplayReport> {
  const { header, requests } = recording;
  const common = {
    zulipFeatureLevel: header.zulipFeatureLevel,
    zulipVersion: header.zulipVersion,
    rateLimit: false as const,
    heartbeatIntervalMs: 1000,
    requestLogSize: 0,
  };
  const sim =
    header.seed === null
      ? (await startDemoSim({ ...common, realmName: 'Zulip Simulator demo' })).sim
      : await startZulipSim({ ...seedOptions(header.seed), ...common });
  const report: ReplayReport = { total: requests.length, matched: 0, skipped: 0, mismatches: [] };
  const queues = new Map<string, string>();
  const eventIds = new Map<string, Map<number, number>>();
  try {
    for (const r of requests) {
      if (r.fault) {
        report.skipped++;
        continue;
      }
      const params: Record<string, unknown> = { ...r.params };
      const recordedQueue = typeof params.queue_id === 'string' ? params.queue_id : undefined;
      if (recordedQueue !== undefined && queues.has(recordedQueue))
        params.queue_id = queues.get(recordedQueue);
      if (r.method === 'GET' && r.path.endsWith('/events') && recordedQueue !== undefined) {
        const map = eventIds.get(recordedQueue) ?? new Map<number, number>();
        const last = Number(params.last_event_id);
        if (Number.isInteger(last) && last >= 0) {
          let mapped = -1;
          for (const [from, to] of map) if (from <= last) mapped = Math.max(mapped, to);
          params.last_event_id = String(mapped);
        }
        if (realEvents(r.response).length === 0) params.dont_block = 'true';
      }
      const answer = await send(sim, r, params);
      // Learn the new queue and event ids from what came back.
      const rq = (r.response as { queue_id?: unknown })?.queue_id;
      const aq = (answer.body as { queue_id?: unknown })?.queue_id;
      if (typeof rq === 'string' && typeof aq === 'string') queues.set(rq, aq);
      if (recordedQueue !== undefined && r.path.endsWith('/events')) {
        const map = eventIds.get(recordedQueue) ?? new Map<number, number>();
        const before = realEvents(r.response);
        const after = realEvents(answer.body);
        before.forEach((e, i) => {
          const to = after[i]?.id;
          if (typeof e.id === 'number' && typeof to === 'number') map.set(e.id, to);
        });
        eventIds.set(recordedQueue, map);
      }
      const expected = { status: r.status, body: normalize(r.response, header.site) };
      const actual = { status: answer.status, body: normalize(answer.body, sim.url) };
      const where = firstDifference(expected, actual);
      if (!where) report.matched++;
      else {
        report.mismatches.push({
          seq: r.seq,
          method: r.method,
          path: r.path,
          where,
          recorded: expected,
          replayed: actual,
        });
      }
    }
  } finally {
    await sim.close();
  }
  return report;
}

async function send(
  sim: ZulipSim,
  r: RecordedRequest,
  params: Record<string, unknown>,
): Promise<{ status: number; body: unknown }> {
  const url = new URL(r.path, sim.url);
  const headers: Record<string, string> = { 'user-agent': r.userAgent ?? '' };
  if (r.user !== null) {
    const c = sim.credentials(r.user);
    headers.authorization = `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}`;
  }
  let body: string | FormData | undefined;
  const files = Object.entries(params).filter(([, v]) => v !== null && typeof v === 'object');
  if (files.length > 0) {
    const form = new FormData();
    for (const [k, v] of Object.entries(params)) {
      if (v !== null && typeof v === 'object') {
        const f = v as { filename?: string; size?: number; contentType?: string };
        const type = f.contentType ?? 'application/octet-stream';
        form.set(k, new Blob([new Uint8Array(f.size ?? 0).fill(120)], { type }), f.filename ?? 'file');
      } else form.set(k, String(v));
    }
    body = form;
  } else if (r.method === 'GET' || r.method === 'HEAD') {
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, String(v));
  } else {
    body = new URLSearchParams(
      Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await fetch(url, { method: r.method, headers, body: body ?? null });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed };
}
