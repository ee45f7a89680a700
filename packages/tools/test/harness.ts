import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessPolicy, type AccessPolicySettings, type StreamInfo, ZulipClient } from '@zmcp/core';
import { UploadRoots } from '@zmcp/uploads';
import { type SimUser, startZulipSim, type ZulipSim, type ZulipSimOptions } from '@zmcp/zulip-sim';
import { createCatalog } from '../src/catalog.js';
import type { ToolCallOutcome, ToolHost } from '../src/host.js';
import { createToolServices, loadRealmFacts, type ToolServices } from '../src/services.js';
import type { AnyToolDefinition } from '../src/tool.js';
import { callThrough, testHost } from './call.js';

/** The people, streams and bot of the harness realm. */
export interface HarnessRealm {
  bot: SimUser;
  ann: SimUser;
  bo: SimUser;
  /** A second human with the same first name as `ann`, for ambiguity tests. */
  annie: SimUser;
  /** Public streams `general` and `dev`; private `secret` (bot subscribed) and `hidden` (bot not). */
  streams: { general: number; dev: number; secret: number; hidden: number };
}

/** The realm's streams as the policy resolves allowlists against them. */
export function simStreams(sim: ZulipSim): StreamInfo[] {
  return sim.realm.streams().map((s) => ({ name: s.name, stream_id: s.streamId, invite_only: s.inviteOnly }));
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  /** The policy, its allowlists by name or id as configured (resolved against the realm's streams). */
  policy?: Partial<AccessPolicySettings>;
  /** Create a temp directory and register it as upload root `work`. */
  uploadRoot?: boolean;
  sim?: ZulipSimOptions;
  pageBudgetBytes?: number;
  timeZone?: string;
  /** Fixed clock for natural-date tests (milliseconds). */
  now?: () => number;
}

/** A realm, a bot client and the full catalog bound to it. */
export interface Harness {
  sim: ZulipSim;
  realm: HarnessRealm;
  client: ZulipClient;
  services: ToolServices;
  /** The realm tools' definitions, by name. */
  tools: Map<string, AnyToolDefinition>;
  /** The host serving the realm tools. */
  host: ToolHost;
  /** The upload root directory, when `uploadRoot` was asked for. */
  uploadDir: string | undefined;
  /** Runs a tool as an app would: input validation, handler, failures as results. */
  call(
    name: string,
    args: unknown,
    options?: {
      signal?: AbortSignal;
      progress?: (update: { progress: number; total?: number; message?: string }) => void;
    },
  ): Promise<ToolCallOutcome>;
  /** Posts a stream message as a user, straight into the realm. */
  post(sender: SimUser, stream: string, topic: string, content: string): number;
  close(): Promise<void>;
}

/**
 * Starts a simulated realm with a small fixed population, a bot client (read-only when the
 * policy says so: the transport enforces it) and the catalog. Close it in `afterEach`/`afterAll`.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  let realm: HarnessRealm | undefined;
  const sim = await startZulipSim({
    rateLimit: false,
    ...options.sim,
    seed(r) {
      const ann = r.addUser({ fullName: 'Ann Lee', email: 'ann@example.test', timezone: 'Europe/Helsinki' });
      const bo = r.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' });
      const annie = r.addUser({ fullName: 'Ann Smith', email: 'annie@example.test' });
      const bot = r.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@example.test',
        isBot: true,
        botType: 1,
      });
      const everyone = [ann.userId, bo.userId, annie.userId, bot.userId];
      const general = r.addStream({ name: 'general', subscribers: everyone });
      const dev = r.addStream({ name: 'dev', subscribers: [ann.userId, bo.userId] });
      const secret = r.addStream({ name: 'secret', inviteOnly: true, subscribers: [ann.userId, bot.userId] });
      const hidden = r.addStream({ name: 'hidden', inviteOnly: true, subscribers: [ann.userId] });
      realm = {
        bot,
        ann,
        bo,
        annie,
        streams: {
          general: general.streamId,
          dev: dev.streamId,
          secret: secret.streamId,
          hidden: hidden.streamId,
        },
      };
    },
  });
  if (realm === undefined) throw new Error('harness realm was not seeded');
  const seeded = realm;
  const policyConfig: AccessPolicySettings = { readOnly: false, ...options.policy };
  const credentials = sim.credentials(seeded.bot.userId);
  const client = new ZulipClient({ ...credentials, readOnly: policyConfig.readOnly });
  let uploadDir: string | undefined;
  let uploadRoots: UploadRoots | undefined;
  if (options.uploadRoot === true) {
    uploadDir = await mkdtemp(join(tmpdir(), 'zmcp-tools-'));
    uploadRoots = await UploadRoots.open([{ name: 'work', path: uploadDir }]);
  }
  const facts = await loadRealmFacts(client, { readOnly: policyConfig.readOnly });
  const services = createToolServices({
    client,
    policy: AccessPolicy.resolve(policyConfig, simStreams(sim)),
    site: credentials.site,
    identity: facts.identity,
    maxMessageLength: facts.maxMessageLength ?? 10_000,
    maxFileBytes: facts.maxFileBytes ?? 25 * 1024 * 1024,
    timeZone: options.timeZone ?? 'UTC',
    pageBudgetBytes: options.pageBudgetBytes,
    uploadRoots,
    now: options.now,
  });
  const { host, tools } = testHost(createCatalog(services));
  return {
    sim,
    realm: seeded,
    client,
    services,
    tools,
    host,
    uploadDir,
    call(name, args, callOptions = {}) {
      return callThrough(host, name, args, callOptions);
    },
    post(sender, stream, topic, content) {
      return sim.realm.sendMessage({ senderId: sender.userId, type: 'stream', stream, topic, content });
    },
    async close() {
      await client.close();
      await sim.close();
      if (uploadDir !== undefined) await rm(uploadDir, { recursive: true, force: true });
    },
  };
}
