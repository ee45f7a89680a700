// What reached Zulip, read from the simulator's request log: which stream or DM each non-GET
// request acted in, and which reads touched a closed stream or a closed file. Written from
// Zulip's API (reference/zulip-api.md), not from the server's code.
import type { SimRequestRecord, ZulipSim } from '@zmcp/zulip-sim';

/** Where a request acted. */
export type Target =
  | { kind: 'stream'; streamId: number; why: string }
  | { kind: 'dm'; why: string }
  | { kind: 'unknown'; why: string };

/**
 * Requests that change nothing anyone else sees: queues, the bot's own flags, an unlinked upload,
 * cancelling one of the bot's own reminders.
 */
const NEUTRAL: readonly [string, RegExp][] = [
  ['POST', /^\/api\/v1\/register$/],
  ['DELETE', /^\/api\/v1\/events$/],
  ['POST', /^\/api\/v1\/messages\/flags(?:\/narrow)?$/],
  ['POST', /^\/api\/v1\/user_uploads$/],
  ['DELETE', /^\/api\/v1\/reminders\/\d+$/],
];

function json(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * Keeps where every message is (stream or DM), refreshed on demand, so a request about a message
 * that has since moved or gone is still placed.
 */
export class MessagePlaces {
  readonly #sim: ZulipSim;
  readonly #places = new Map<number, number | 'dm'>();

  constructor(sim: ZulipSim) {
    this.#sim = sim;
    this.refresh();
  }

  /** Records where every message is now. */
  refresh(): void {
    const realm = this.#sim.realm;
    for (let id = 1; id <= realm.maxMessageId(); id++) {
      const m = realm.message(id);
      if (m !== undefined) this.#places.set(id, m.type === 'stream' ? (m.streamId as number) : 'dm');
    }
  }

  /** Every place the message has been seen in (now and before). */
  of(id: number): (number | 'dm')[] {
    const out = new Set<number | 'dm'>();
    const m = this.#sim.realm.message(id);
    if (m !== undefined) {
      out.add(m.type === 'stream' ? (m.streamId as number) : 'dm');
      for (const e of m.editHistory) {
        if (e.prevStream !== undefined) out.add(e.prevStream);
        if (e.stream !== undefined) out.add(e.stream);
      }
    }
    const known = this.#places.get(id);
    if (known !== undefined) out.add(known);
    return [...out];
  }
}

function streamRef(sim: ZulipSim, ref: unknown, why: string): Target {
  const value = Array.isArray(ref) ? ref[0] : ref;
  if (typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value))) {
    return { kind: 'stream', streamId: Number(value), why };
  }
  if (typeof value === 'string') {
    const s = sim.realm.stream(value);
    return s === undefined
      ? { kind: 'unknown', why: `${why}: a stream named ${JSON.stringify(value)} that does not exist` }
      : { kind: 'stream', streamId: s.streamId, why };
  }
  return { kind: 'unknown', why: `${why}: no stream` };
}

function placesOf(places: MessagePlaces, id: number, why: string): Target[] {
  const found = places.of(id);
  if (found.length === 0) return [{ kind: 'unknown', why: `${why}: message ${id} never seen` }];
  return found.map((p) => (p === 'dm' ? { kind: 'dm', why } : { kind: 'stream', streamId: p, why }));
}

/** Where a request acted, or `[]` for a read or a neutral request. */
export function targetsOf(sim: ZulipSim, places: MessagePlaces, r: SimRequestRecord): Target[] {
  if (r.method === 'GET' || r.method === 'HEAD') return [];
  if (NEUTRAL.some(([m, p]) => m === r.method && p.test(r.path))) return [];
  const why = `${r.method} ${r.path}`;
  const p = r.params;
  if (r.path === '/api/v1/messages' && r.method === 'POST') {
    const type = String(p.type);
    if (type === 'stream' || type === 'channel') return [streamRef(sim, json(p.to), why)];
    return [{ kind: 'dm', why }];
  }
  const message = /^\/api\/v1\/messages\/(\d+)(?:\/reactions)?$/.exec(r.path);
  if (message !== null) {
    const targets = placesOf(places, Number(message[1]), why);
    if (p.stream_id !== undefined) targets.push(streamRef(sim, p.stream_id, `${why} (move)`));
    return targets;
  }
  if (r.path === '/api/v1/typing') {
    const type = String(p.type ?? 'direct');
    if (type === 'stream' || type === 'channel') return [streamRef(sim, p.stream_id, why)];
    return [{ kind: 'dm', why }];
  }
  if (r.path === '/api/v1/users/me/subscriptions') {
    const subs = json(p.subscriptions);
    if (!Array.isArray(subs)) return [{ kind: 'unknown', why: `${why}: no subscriptions list` }];
    return subs.map((s) =>
      streamRef(sim, typeof s === 'object' && s !== null ? (s as { name?: unknown }).name : s, why),
    );
  }
  // A reminder acts in the conversation of the message it is about.
  if (r.path === '/api/v1/reminders' && r.method === 'POST') {
    return placesOf(places, Number(p.message_id), why);
  }
  const topic = /^\/api\/v1\/streams\/(\d+)\/delete_topic$/.exec(r.path);
  if (topic !== null) return [{ kind: 'stream', streamId: Number(topic[1]), why }];
  return [{ kind: 'unknown', why }];
}

/** The write policy a test holds the server to. */
export interface WritePolicy {
  streams: ReadonlySet<number>;
  dms: boolean;
}

/** The non-GET requests in `records` that acted outside `policy`, described. */
export function writesOutside(
  sim: ZulipSim,
  places: MessagePlaces,
  records: readonly SimRequestRecord[],
  policy: WritePolicy,
): string[] {
  const out: string[] = [];
  for (const r of records) {
    for (const t of targetsOf(sim, places, r)) {
      if (t.kind === 'stream' && policy.streams.has(t.streamId)) continue;
      if (t.kind === 'dm' && policy.dms) continue;
      const where =
        t.kind === 'stream' ? `stream ${t.streamId}` : t.kind === 'dm' ? 'a DM' : 'somewhere unknown';
      out.push(
        `${t.why} acted in ${where} (status ${r.status}, params ${JSON.stringify(r.params).slice(0, 160)})`,
      );
    }
  }
  return out;
}

/**
 * Reads in `records` that reached into a closed stream or file: a narrow naming a closed stream,
 * the topics of one, or the bytes of a closed file. (Fetching one message by id is not counted:
 * Zulip tells where a message is only with the message.)
 */
export function closedReads(
  sim: ZulipSim,
  records: readonly SimRequestRecord[],
  closedStreams: ReadonlySet<number>,
  closedPaths: readonly string[],
): string[] {
  const out: string[] = [];
  const closedStream = (operand: unknown) => {
    if (typeof operand === 'number') return closedStreams.has(operand);
    if (typeof operand === 'string') {
      if (/^\d+$/.test(operand)) return closedStreams.has(Number(operand));
      const s = sim.realm.stream(operand);
      return s !== undefined && closedStreams.has(s.streamId);
    }
    return false;
  };
  for (const r of records) {
    if (r.method === 'POST' && r.path === '/api/v1/register') {
      const narrow = json(r.params.narrow);
      for (const term of Array.isArray(narrow) ? narrow : []) {
        const [operator, operand] = Array.isArray(term) ? term : [];
        if ((operator === 'channel' || operator === 'stream') && closedStream(operand))
          out.push(`POST ${r.path}: an event queue narrowed to closed stream ${JSON.stringify(operand)}`);
      }
      continue;
    }
    if (r.method !== 'GET') continue;
    const files = closedPaths.filter((path) => r.path.endsWith(path.replace(/^\/user_uploads/, '')));
    if (files.length > 0) out.push(`GET ${r.path}: the bytes of a closed file`);
    const topics = /^\/api\/v1\/users\/me\/(\d+)\/topics$/.exec(r.path);
    if (topics !== null && closedStreams.has(Number(topics[1])))
      out.push(`GET ${r.path}: topics of a closed stream`);
    if (r.path === '/api/v1/messages' || r.path === '/api/v1/messages/flags/narrow') {
      const narrow = json(r.params.narrow);
      if (!Array.isArray(narrow)) continue;
      for (const term of narrow) {
        const [operator, operand] = Array.isArray(term)
          ? term
          : [(term as { operator?: unknown }).operator, (term as { operand?: unknown }).operand];
        const negated = !Array.isArray(term) && (term as { negated?: unknown }).negated === true;
        if (!negated && (operator === 'channel' || operator === 'stream') && closedStream(operand))
          out.push(`GET ${r.path} with a narrow on closed stream ${JSON.stringify(operand)}`);
      }
    }
  }
  return out;
}
