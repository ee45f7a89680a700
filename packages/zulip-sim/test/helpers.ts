// Plain-HTTP helpers for the simulator's own tests: global fetch, no zmcp client.
import { type SimRealm, startZulipSim, type ZulipSim, type ZulipSimOptions } from '../src/index.js';

export type Encoding = 'form' | 'multipart' | 'query';

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are inspected field by field
export type Json = any;

/** A fetch response body as JSON. */
export async function json(res: Response): Promise<Json> {
  return res.json();
}

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected field by field
  body: any;
  text: string;
}

function encodeValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One user's view of the API, speaking Zulip's wire format by hand. */
export class Client {
  readonly sim: ZulipSim;
  readonly email: string;
  readonly apiKey: string;
  userAgent = 'ZulipPython/0.9.1 (Linux; 3.12)';

  constructor(sim: ZulipSim, email: string, apiKey: string) {
    this.sim = sim;
    this.email = email;
    this.apiKey = apiKey;
  }

  static of(sim: ZulipSim, user: number | string): Client {
    const c = sim.credentials(user);
    return new Client(sim, c.email, c.apiKey);
  }

  get authorization(): string {
    return `Basic ${Buffer.from(`${this.email}:${this.apiKey}`).toString('base64')}`;
  }

  async call(
    method: string,
    path: string,
    params: Record<string, unknown> = {},
    opts: { encoding?: Encoding; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Reply> {
    const encoding = opts.encoding ?? (method === 'GET' ? 'query' : 'form');
    const url = new URL(`${this.sim.url}/api/v1${path}`);
    const headers: Record<string, string> = {
      authorization: this.authorization,
      'user-agent': this.userAgent,
      ...opts.headers,
    };
    let body: string | FormData | undefined;
    const entries = Object.entries(params).filter(([, v]) => v !== undefined);
    if (encoding === 'query') {
      for (const [k, v] of entries) url.searchParams.set(k, encodeValue(v));
    } else if (encoding === 'form') {
      body = new URLSearchParams(entries.map(([k, v]): [string, string] => [k, encodeValue(v)])).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else {
      const form = new FormData();
      for (const [k, v] of entries) form.set(k, encodeValue(v));
      body = form;
    }
    const res = await fetch(url, { method, headers, body: body ?? null, signal: opts.signal ?? null });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get(path: string, params?: Record<string, unknown>): Promise<Reply> {
    return this.call('GET', path, params);
  }

  post(path: string, params?: Record<string, unknown>): Promise<Reply> {
    return this.call('POST', path, params);
  }

  patch(path: string, params?: Record<string, unknown>, encoding: Encoding = 'form'): Promise<Reply> {
    return this.call('PATCH', path, params, { encoding });
  }

  delete(path: string, params?: Record<string, unknown>, encoding: Encoding = 'form'): Promise<Reply> {
    return this.call('DELETE', path, params, { encoding });
  }

  /** Sends and returns the new message id, failing loudly otherwise. */
  async send(params: Record<string, unknown>): Promise<number> {
    const r = await this.post('/messages', params);
    if (r.status !== 200) throw new Error(`send failed: ${r.text}`);
    return r.body.id as number;
  }

  async register(params: Record<string, unknown> = {}): Promise<{ queueId: string; body: Reply['body'] }> {
    const r = await this.post('/register', params);
    if (r.status !== 200) throw new Error(`register failed: ${r.text}`);
    return { queueId: r.body.queue_id as string, body: r.body };
  }

  /** A long-poll; resolves with the whole reply. */
  poll(queueId: string, lastEventId: number, extra: Record<string, unknown> = {}): Promise<Reply> {
    return this.get('/events', { queue_id: queueId, last_event_id: lastEventId, ...extra });
  }

  /** Non-blocking read of a queue's pending events. */
  async events(queueId: string, lastEventId = -1): Promise<Record<string, unknown>[]> {
    const r = await this.get('/events', { queue_id: queueId, last_event_id: lastEventId, dont_block: true });
    if (r.status !== 200) throw new Error(`events failed: ${r.text}`);
    return r.body.events;
  }
}

/** Waits until a long-poll is actually blocked in the simulator (no sleeps). */
export async function untilPolling(sim: ZulipSim, queueId: string, polling = true): Promise<void> {
  // Each turn lets pending I/O (the request arriving, a socket closing) run first.
  for (let i = 0; i < 50_000; i++) {
    if ((sim.queues().find((q) => q.queueId === queueId)?.polling ?? false) === polling) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`queue ${queueId} never ${polling ? 'started' : 'stopped'} polling`);
}

export interface World {
  sim: ZulipSim;
  realm: SimRealm;
  ids: {
    alice: number;
    bob: number;
    carol: number;
    admin: number;
    bot: number;
    guest: number;
    general: number;
    design: number;
    secret: number;
    shared: number;
  };
  alice: Client;
  bob: Client;
  carol: Client;
  admin: Client;
  bot: Client;
  guest: Client;
}

/**
 * A small realm: Alice, Bob and Carol (members), an admin, a bot owned by Alice and a guest;
 * #general (public, everyone), #design (public, Alice and Bob), #secret (private, protected
 * history: Alice and the admin), #shared (private, shared history: Alice and the bot).
 */
export async function world(options: ZulipSimOptions = {}): Promise<World> {
  const sim = await startZulipSim({ rateLimit: false, ...options });
  const realm = sim.realm;
  const alice = realm.addUser({
    fullName: 'Alice Ant',
    email: 'alice@acme.example',
    timezone: 'Europe/Oslo',
  });
  const bob = realm.addUser({ fullName: 'Bob Bee', email: 'bob@acme.example' });
  const carol = realm.addUser({ fullName: 'Carol Cat', email: 'carol@acme.example' });
  const admin = realm.addUser({ fullName: 'Ada Admin', email: 'admin@acme.example', role: 200 });
  const bot = realm.addUser({
    fullName: 'Helper',
    email: 'helper-bot@acme.example',
    isBot: true,
    botOwnerId: alice.userId,
  });
  const guest = realm.addUser({ fullName: 'Gus Guest', email: 'guest@acme.example', role: 600 });
  const everyone = [alice, bob, carol, admin, bot].map((u) => u.userId);
  const general = realm.addStream({ name: 'general', description: 'Everyone', subscribers: everyone });
  const design = realm.addStream({ name: 'design', subscribers: [alice.userId, bob.userId] });
  const secret = realm.addStream({
    name: 'secret',
    inviteOnly: true,
    subscribers: [alice.userId, admin.userId],
  });
  const shared = realm.addStream({
    name: 'shared',
    inviteOnly: true,
    historyPublicToSubscribers: true,
    subscribers: [alice.userId, bot.userId],
  });
  return {
    sim,
    realm,
    ids: {
      alice: alice.userId,
      bob: bob.userId,
      carol: carol.userId,
      admin: admin.userId,
      bot: bot.userId,
      guest: guest.userId,
      general: general.streamId,
      design: design.streamId,
      secret: secret.streamId,
      shared: shared.streamId,
    },
    alice: Client.of(sim, alice.userId),
    bob: Client.of(sim, bob.userId),
    carol: Client.of(sim, carol.userId),
    admin: Client.of(sim, admin.userId),
    bot: Client.of(sim, bot.userId),
    guest: Client.of(sim, guest.userId),
  };
}

/** A settable millisecond clock for `now`. */
export function manualClock(start = Date.UTC(2026, 0, 1, 12)): {
  now: () => number;
  advance(ms: number): void;
} {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}
