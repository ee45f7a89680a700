// A simulated realm, stub agent CLIs first on PATH, and a launcher: what the tests run against.
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type SimMessage,
  type SimRequestRecord,
  type SimUser,
  startZulipSim,
  type ZulipSim,
} from '@zmcp/zulip-sim';
import {
  createLauncher,
  type Launcher,
  type LauncherEvent,
  type LauncherOptions,
  type SessionEndInfo,
} from '../src/index.js';

export const appDir = join(import.meta.dirname, '..');
/** The built zulip-mcp of the @zmcp/mcp-server dev dependency (test/global-setup.ts keeps it current). */
export const zulipMcpBin = join(appDir, 'node_modules', '@zmcp', 'mcp-server', 'dist', 'cli.js');
const stubScript = join(appDir, 'test', 'stub', 'agent.mjs');

/** What a stub agent wrote about itself. */
export interface StubRecord {
  backend: string;
  pid: number;
  startedAt: number;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  config?: unknown;
  /** The options the CLI's parser read (as the real parser reads them). */
  options?: Record<string, unknown>;
  /** The prompt as the CLI reads it from argv and stdin. */
  prompt?: string;
  stdin?: string;
  /** The error the real CLI gives for this command line, and its exit code. */
  usageError?: string;
  exitCode?: number;
  server?: { command: string; args: string[]; envKeys: string[] };
  events: { step: string; [key: string]: unknown }[];
}

/** Writes `claude`, `codex` and `opencode` shims into `dir`, each running the stub agent. */
export function writeStubs(dir: string): void {
  for (const name of ['claude', 'codex', 'opencode']) {
    const path = join(dir, name);
    writeFileSync(path, `#!/usr/bin/env node\nimport(${JSON.stringify(pathToFileURL(stubScript).href)});\n`);
    chmodSync(path, 0o755);
  }
}

/** Every stub record in `dir`, with its events. */
export function readRecords(dir: string): StubRecord[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const record = JSON.parse(readFileSync(join(dir, f), 'utf8')) as StubRecord;
      const events = join(dir, f.replace(/\.json$/, '.events.jsonl'));
      record.events = existsSync(events)
        ? readFileSync(events, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as StubRecord['events'][number])
        : [];
      return record;
    })
    .sort((a, b) => a.startedAt - b.startedAt);
}

/** True while a process exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export interface World {
  sim: ZulipSim;
  bot: SimUser;
  ann: SimUser;
  bo: SimUser;
  cy: SimUser;
  dir: string;
  stubDir: string;
  recordDir: string;
  stateDir: string;
  /** The agents' environment: stubs first on PATH, the records' directory, the key the entry refers to. */
  env: Record<string, string>;
  /** The zulip server entry of the test's `.mcp.json`. */
  server: Record<string, unknown>;
  events: LauncherEvent[];
  /** The first event (already seen or still to come) that matches. */
  event<T extends LauncherEvent['type']>(
    type: T,
    match?: (e: Extract<LauncherEvent, { type: T }>) => boolean,
  ): Promise<Extract<LauncherEvent, { type: T }>>;
  /** The end of the run of a trigger. */
  ended(messageId: number): Promise<SessionEndInfo>;
  /** The first request to the simulator from now on that matches. */
  nextRequest(match: (r: SimRequestRecord) => boolean): Promise<SimRequestRecord>;
  /** A listen (or any narrowed) queue registered by the bot for `topic`, from now on. */
  nextListen(topic: string): Promise<SimRequestRecord>;
  post(sender: SimUser, topic: string, content: string, stream?: string): number;
  mention(sender: SimUser, topic: string, extra?: string, stream?: string): number;
  dm(sender: SimUser, content: string, to?: number[]): number;
  records(): StubRecord[];
  /** Every message of a topic (or a DM conversation with `topic` undefined and `dmWith` set), oldest first. */
  messages(filter: { topic?: string; dmWith?: number; sender?: number }): SimMessage[];
  /** The reactions on a message, by emoji name. */
  reactions(messageId: number): string[];
  launch(options?: Partial<LauncherOptions>): Promise<Launcher>;
  close(): Promise<void>;
}

export async function startWorld(): Promise<World> {
  let people: { bot: SimUser; ann: SimUser; bo: SimUser; cy: SimUser } | undefined;
  const sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      const bo = realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' });
      const cy = realm.addUser({ fullName: 'Cy Park', email: 'cy@example.test' });
      const bot = realm.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@example.test',
        isBot: true,
        botType: 1,
      });
      const everyone = [ann.userId, bo.userId, cy.userId, bot.userId];
      for (const name of ['general', 'ops', 'design']) realm.addStream({ name, subscribers: everyone });
      people = { bot, ann, bo, cy };
    },
  });
  if (people === undefined) throw new Error('realm not seeded');
  const { bot } = people;
  const dir = await mkdtemp(join(tmpdir(), 'zulip-agent-test-'));
  const stubDir = join(dir, 'bin');
  const recordDir = join(dir, 'records');
  const stateDir = join(dir, 'state');
  for (const d of [stubDir, recordDir]) await mkdir(d);
  writeStubs(stubDir);
  const env: Record<string, string> = {
    PATH: `${stubDir}${delimiter}${process.env.PATH ?? ''}`,
    HOME: dir,
    STUB_RECORD_DIR: recordDir,
    TEST_BOT_KEY: bot.apiKey,
  };
  const server = {
    command: process.execPath,
    args: [zulipMcpBin],
    env: {
      ZULIP_SITE: sim.url,
      ZULIP_EMAIL: bot.email,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a reference, as a .mcp.json holds it
      ZULIP_API_KEY: '${TEST_BOT_KEY}',
      ZULIP_STATE_DIR: join(dir, 'mcp-state'),
    },
  };

  const events: LauncherEvent[] = [];
  const waiters = new Set<(e: LauncherEvent) => void>();
  const onEvent = (e: LauncherEvent) => {
    events.push(e);
    for (const w of [...waiters]) w(e);
  };
  const event: World['event'] = (type, match) =>
    new Promise((resolve) => {
      type E = Extract<LauncherEvent, { type: typeof type }>;
      const test = (e: LauncherEvent): e is E => e.type === type && (match === undefined || match(e as E));
      const seen = events.find(test);
      if (seen !== undefined) return resolve(seen);
      const waiter = (e: LauncherEvent) => {
        if (!test(e)) return;
        waiters.delete(waiter);
        resolve(e);
      };
      waiters.add(waiter);
    });
  const nextRequest = (match: (r: SimRequestRecord) => boolean) =>
    new Promise<SimRequestRecord>((resolve) => {
      const off = sim.onRequest((r) => {
        if (!match(r)) return;
        off();
        resolve(r);
      });
    });
  const launchers: Launcher[] = [];
  const world: World = {
    sim,
    ...people,
    dir,
    stubDir,
    recordDir,
    stateDir,
    env,
    server,
    events,
    event,
    ended: async (messageId) => (await event('ended', (e) => e.end.trigger.messageId === messageId)).end,
    nextRequest,
    nextListen: (topic) =>
      nextRequest(
        (r) =>
          r.method === 'POST' &&
          r.path.endsWith('/register') &&
          r.userId === bot.userId &&
          String(r.params.narrow ?? '').includes(JSON.stringify(topic)),
      ),
    post: (sender, topic, content, stream = 'general') =>
      sim.realm.sendMessage({ senderId: sender.userId, type: 'stream', stream, topic, content }),
    mention: (sender, topic, extra = '', stream = 'general') =>
      sim.realm.sendMessage({
        senderId: sender.userId,
        type: 'stream',
        stream,
        topic,
        content: `@**Helper Bot** please help ${extra}`.trim(),
      }),
    dm: (sender, content, to = [bot.userId]) =>
      sim.realm.sendMessage({ senderId: sender.userId, type: 'direct', to, content }),
    records: () => readRecords(recordDir),
    messages(filter) {
      const out: SimMessage[] = [];
      for (let id = 1; id <= sim.realm.maxMessageId(); id++) {
        const m = sim.realm.message(id);
        if (m === undefined) continue;
        if (filter.topic !== undefined && m.topic?.toLowerCase() !== filter.topic.toLowerCase()) continue;
        if (filter.dmWith !== undefined && !(m.type === 'direct' && m.recipientIds?.includes(filter.dmWith)))
          continue;
        if (filter.sender !== undefined && m.senderId !== filter.sender) continue;
        out.push(m);
      }
      return out;
    },
    reactions: (messageId) => sim.realm.message(messageId)?.reactions.map((r) => r.emojiName) ?? [],
    async launch(options = {}) {
      const launcher = createLauncher({
        zulip: sim.credentials(bot.userId),
        mcpServer: server,
        allowedUsers: [people?.ann.userId as number, 'CY@example.test'],
        stateDir,
        env,
        workdir: dir,
        stopGraceMs: 5000,
        onEvent,
        ...options,
      });
      launchers.push(launcher);
      await launcher.start();
      return launcher;
    },
    async close() {
      for (const l of launchers) await l.close();
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return world;
}
