import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import type { Logger } from '@zmcp/core';
import {
  type ChannelMessage,
  type IncomingVerdict,
  McplHost,
  type McplHostOptions,
  type McplSession,
  type ReceivedPushEvent,
} from '@zmcp/mcpl';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach } from 'vitest';
import { parseConfig } from '../src/config.js';
import { createZulipMcpl, type ZulipMcpl } from '../src/runtime.js';

/** Everything a 0.5 host may be granted by zulip-mcpl. */
export const FULL_GRANT = [
  'tools',
  'pushEvents',
  'channels.*',
  'contextHooks.beforeInference.inject.beforeUser',
];

/** The realm every test starts from: a bot, two people, and four streams. */
export interface Realm {
  sim: ZulipSim;
  bot: number;
  ann: number;
  bo: number;
  /** Public, bot subscribed: general, random. Public, bot not subscribed: lobby. Private, bot not invited: hidden. */
  streams: { general: number; random: number; lobby: number; hidden: number };
  stateDir: string;
  env: Record<string, string>;
  say(stream: string, content: string, options?: { topic?: string; sender?: number }): number;
  dm(content: string, sender?: number): number;
  close(): Promise<void>;
}

/** Starts the realm and a state directory; the bot can read DMs (`ZULIP_PRIVATE_STREAMS=__ALL__`). */
export async function startRealm(): Promise<Realm> {
  const sim = await startZulipSim({ rateLimit: false });
  const bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
  const bo = sim.realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' }).userId;
  const streams = {
    general: sim.realm.addStream({ name: 'general', subscribers: [bot, ann, bo] }).streamId,
    random: sim.realm.addStream({ name: 'random', subscribers: [bot, ann] }).streamId,
    lobby: sim.realm.addStream({ name: 'lobby', subscribers: [ann] }).streamId,
    hidden: sim.realm.addStream({ name: 'hidden', inviteOnly: true, subscribers: [ann] }).streamId,
  };
  const stateDir = await mkdtemp(join(tmpdir(), 'zulip-mcpl-test-'));
  const creds = sim.credentials(bot);
  return {
    sim,
    bot,
    ann,
    bo,
    streams,
    stateDir,
    env: {
      HOME: '/nonexistent',
      ZULIP_SITE: creds.site,
      ZULIP_EMAIL: creds.email,
      ZULIP_API_KEY: creds.apiKey,
      ZULIP_STATE_DIR: stateDir,
      ZULIP_PRIVATE_STREAMS: '__ALL__',
      AGENT_TIMEZONE: 'UTC',
      ZMCP_LOG_LEVEL: 'silent',
    },
    say: (stream, content, options = {}) =>
      sim.realm.sendMessage({
        senderId: options.sender ?? ann,
        type: 'stream',
        stream,
        topic: options.topic ?? 'deploys',
        content,
      }),
    dm: (content, sender = ann) =>
      sim.realm.sendMessage({ senderId: sender, type: 'direct', to: [bot], content }),
    async close() {
      await sim.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** Resolves when `check` holds for something a host received; every item received is kept. */
export class Inbox<T> {
  readonly items: T[] = [];
  readonly #waiters: { check: (items: T[]) => boolean; resolve: () => void }[] = [];

  add(...items: T[]): void {
    this.items.push(...items);
    for (const w of [...this.#waiters]) {
      if (w.check(this.items)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  /** Resolves once `check` holds over everything received so far. */
  until(check: (items: T[]) => boolean): Promise<void> {
    if (check(this.items)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ check, resolve }));
  }

  /** Resolves with the first received item matching `match` (already received ones count). */
  async first(match: (item: T) => boolean): Promise<T> {
    await this.until((items) => items.some(match));
    return this.items.find(match) as T;
  }
}

/** A zulip-mcpl over an in-memory pair with a test host from `@zmcp/mcpl`'s host role. */
export interface Served {
  app: ZulipMcpl;
  host: McplHost;
  session: McplSession;
  incoming: Inbox<ChannelMessage>;
  pushes: Inbox<ReceivedPushEvent>;
  /** Fires once per channels/register or channels/changed the host accepted. */
  registrations: Inbox<number>;
  /** Resolves once the server has read the host's answers on a channel and written its state. */
  settled(channelId: string): Promise<void>;
  close(): Promise<void>;
}

/** The text of a message's first content block. */
export function textOf(message: { content: readonly { type: string; text?: string }[] }): string {
  const block = message.content[0];
  return block?.type === 'text' ? (block.text ?? '') : '';
}

/**
 * Starts zulip-mcpl for the realm and connects a host to it. With `grant`, the host sends its
 * policy Request and waits for the channels to be registered.
 */
export async function serve(
  realm: Realm,
  options: {
    env?: Record<string, string>;
    host?: Partial<McplHostOptions>;
    grant?: readonly string[] | null;
    incoming?: (messages: ChannelMessage[]) => IncomingVerdict[] | Promise<IncomingVerdict[]>;
    pushEvent?: (event: ReceivedPushEvent) => IncomingVerdict | Promise<IncomingVerdict>;
    logger?: Logger;
  } = {},
): Promise<Served> {
  const config = parseConfig({ ...realm.env, ...options.env }, []);
  const app = await createZulipMcpl({
    config,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  const incoming = new Inbox<ChannelMessage>();
  const pushes = new Inbox<ReceivedPushEvent>();
  const registrations = new Inbox<number>();
  const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
  const sessionPromise = app.serve(serverSide);
  const host = await McplHost.connect(hostSide, {
    name: 'test-host',
    version: '1.0.0',
    ...options.host,
    handlers: {
      ...options.host?.handlers,
      ...(options.incoming === undefined ? {} : { incoming: options.incoming }),
      ...(options.pushEvent === undefined ? {} : { pushEvent: options.pushEvent }),
    },
  });
  const session = await sessionPromise;
  host.on('incoming', (messages) => incoming.add(...messages));
  host.on('push', (event) => pushes.add(event));
  host.on('channels', () => registrations.add(registrations.items.length + 1));
  const grant = options.grant === undefined ? FULL_GRANT : options.grant;
  if (grant !== null) {
    await host.setPolicy({ effectiveCapabilities: [...grant] });
    await app.connection(session)?.started;
  }
  return {
    app,
    host,
    session,
    incoming,
    pushes,
    registrations,
    async settled(channelId) {
      const conn = app.connection(session);
      await conn?.sink.settled(channelId);
      await conn?.engine.flush();
    },
    async close() {
      await host.close();
      await app.close();
    },
  };
}

/** The servers of one test file's tests, over a realm started afresh for each test. */
export interface RealmPerTest {
  /** The servers started in the current test; every one left is closed after it. */
  readonly served: Served[];
  /** Starts zulip-mcpl for the current test's realm ({@link serve}). */
  start(options?: Parameters<typeof serve>[1]): Promise<Served>;
  /** Closes one server before the test ends. */
  stop(s: Served): Promise<void>;
}

/**
 * Registers the file's hooks: a realm ({@link startRealm}) before each test, handed to `use`, and
 * after it every server still running closed, then the realm.
 */
export function realmPerTest(use: (realm: Realm) => void): RealmPerTest {
  let realm: Realm | undefined;
  const served: Served[] = [];
  beforeEach(async () => {
    realm = await startRealm();
    use(realm);
  });
  afterEach(async () => {
    for (const s of served.splice(0)) await s.close();
    await realm?.close();
  });
  return {
    served,
    async start(options = {}) {
      if (realm === undefined) throw new Error('start runs inside a test');
      const s = await serve(realm, options);
      served.push(s);
      return s;
    },
    async stop(s) {
      served.splice(served.indexOf(s), 1);
      await s.close();
    },
  };
}
