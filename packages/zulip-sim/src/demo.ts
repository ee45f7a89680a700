import { encodePng } from './png.js';
import { startZulipSim } from './sim.js';
import type { SimRealm, SimUser, ZulipSim, ZulipSimOptions } from './types.js';

/** What {@link seedDemoRealm} created, for callers that want to point at it. */
export interface DemoRealmInfo {
  /** The bot whose credentials a demo hands out. */
  botId: number;
  /** Humans by first name (lowercase). */
  users: Record<string, number>;
  /** Streams by name. */
  streams: Record<string, number>;
  /** URL of the uploaded demo image. */
  imageUrl: string;
  messageCount: number;
}

/** A deterministic generator, so every demo realm is the same. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 64x40 bar chart, generated as a real PNG. */
export function demoChartPng(): Buffer {
  const bars = [12, 22, 17, 30, 26, 34];
  return encodePng(64, 40, (x, y) => {
    const bar = Math.floor((x - 4) / 10);
    const inBar = x >= 4 && (x - 4) % 10 < 7 && bar < bars.length;
    if (inBar && 38 - y < (bars[bar] as number)) return [54, 110, 196, 255];
    if (y === 38) return [60, 60, 60, 255];
    return [250, 250, 250, 255];
  });
}

const TOPICS: Record<string, string[]> = {
  general: ['announcements', 'lunch', 'weekend plans', 'welcome'],
  engineering: ['deploys', 'flaky tests', 'code review', 'incident 4711', 'api design'],
  design: ['onboarding flow', 'icons', 'dark mode'],
  leadership: ['hiring', 'planning q3'],
  ops: ['on-call', 'alerts'],
};

const LINES = [
  'Morning! Anything blocking today?',
  'I pushed a fix, could someone take a look?',
  'The dashboard looks **much** better now.',
  'Let us sync after lunch.',
  'Tests are green on `main` again.',
  'Here is the write-up: https://example.org/notes/ship-it',
  'Can we move this to tomorrow?',
  'I think we should keep the old behaviour for now.',
  '> quoting the spec: the anchor is inclusive\n\nso the off-by-one is on our side.',
  '* step one: reproduce\n* step two: bisect\n* step three: fix',
  'Nice work :tada:',
  'Does anyone know where the runbook lives?',
  'Rolling back, the error rate doubled.',
  '```bash\nmake deploy ENV=staging\n```',
  'Done. Closing the loop here.',
];

/**
 * Seeds a small, deterministic demo realm: five people, a bot, public, private and
 * web-public streams, a few hundred messages with mentions, DMs, reactions and an image
 * upload. Timestamps spread over the last days, ending now.
 * @throws SimError `SIM_INVALID_ARGUMENT` if the realm already holds users with the demo emails.
 */
export function seedDemoRealm(realm: SimRealm): DemoRealmInfo {
  const rand = prng(4711);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  const team = realm.addProfileField({ name: 'Team', hint: 'Which team are you on?' });
  const person = (
    fullName: string,
    email: string,
    timezone: string,
    teamName: string,
    role: 100 | 300 | 400 = 400,
  ) => realm.addUser({ fullName, email, timezone, role, profileData: { [team.id]: teamName } });
  const people = [
    person('Ann Lee', 'ann@zulip.example', 'Europe/Helsinki', 'Leadership', 100),
    person('Bo Chen', 'bo@zulip.example', 'America/New_York', 'Platform'),
    person('Cy Diaz', 'cy@zulip.example', 'America/Mexico_City', 'Platform', 300),
    person('Dee Evans', 'dee@zulip.example', 'Europe/London', 'Design'),
    person('Eli Fox', 'eli@zulip.example', 'Asia/Tokyo', 'Research'),
  ];
  const [ann, bo, cy, dee, eli] = people as [SimUser, SimUser, SimUser, SimUser, SimUser];
  const bot = realm.addUser({
    fullName: 'Demo Agent',
    email: 'agent-bot@zulip.example',
    isBot: true,
    botType: 1,
    botOwnerId: ann.userId,
  });
  const everyone = [...people.map((p) => p.userId), bot.userId];
  const streams = {
    general: realm.addStream({ name: 'general', description: 'Everyone, everything', subscribers: everyone }),
    engineering: realm.addStream({
      name: 'engineering',
      description: 'Building and shipping',
      subscribers: [ann.userId, bo.userId, cy.userId, bot.userId],
    }),
    design: realm.addStream({
      name: 'design',
      description: 'Pixels and flows',
      isWebPublic: true,
      subscribers: [dee.userId, eli.userId, ann.userId],
    }),
    leadership: realm.addStream({
      name: 'leadership',
      description: 'Private: plans and people',
      inviteOnly: true,
      subscribers: [ann.userId, cy.userId],
    }),
    ops: realm.addStream({
      name: 'ops',
      description: 'Private, shared history: on-call',
      inviteOnly: true,
      historyPublicToSubscribers: true,
      subscribers: [bo.userId, cy.userId, bot.userId],
    }),
  };
  realm.addRealmEmoji({ name: 'shipit', authorId: ann.userId });

  const nowSec = Math.floor(Date.now() / 1000);
  const total = 320;
  let sent = 0;
  const stamp = () => nowSec - (total - sent) * 600;
  const ids: number[] = [];
  const send = (m: Parameters<SimRealm['sendMessage']>[0]): number => {
    const id = realm.sendMessage({ ...m, timestamp: stamp() });
    sent++;
    ids.push(id);
    return id;
  };
  const mention = (u: { fullName: string }) => `@**${u.fullName}**`;

  while (sent < total - 40) {
    const streamName = pick(Object.keys(TOPICS)) as keyof typeof streams;
    const stream = streams[streamName];
    const sender = pick(stream.subscribers.filter((id) => id !== bot.userId));
    let content = pick(LINES);
    const r = rand();
    if (r < 0.12) content = `${mention(bot)} can you summarise ${pick(['this', 'the thread', 'yesterday'])}?`;
    else if (r < 0.2) content = `${mention(pick(people))} ${content}`;
    else if (r < 0.22) content = `@**all** ${content}`;
    else if (r < 0.25) content = `@_**${pick(people).fullName}** fyi: ${content}`;
    const id = send({
      senderId: sender,
      type: 'stream',
      stream: streamName,
      topic: pick(TOPICS[streamName] ?? ['misc']),
      content,
    });
    if (rand() < 0.15) {
      const reactor = pick(stream.subscribers);
      const emoji = pick(['+1', 'tada', 'eyes', 'heart', 'shipit', 'octopus']);
      try {
        realm.addReaction(reactor, id, emoji);
      } catch {
        // The same person picked the same emoji twice: one vote is enough.
      }
    }
  }
  for (let i = 0; i < 30; i++) {
    const a = pick(people);
    const b = pick([...people, bot]);
    if (a.userId === b.userId) continue;
    send({
      senderId: a.userId,
      type: 'direct',
      to: [b.userId],
      content: b.userId === bot.userId ? `Hi agent, ${pick(LINES).toLowerCase()}` : pick(LINES),
    });
  }
  send({
    senderId: ann.userId,
    type: 'direct',
    to: [bo.userId, cy.userId, bot.userId],
    content: `Group check-in: ${mention(bot)}, please keep notes for us.`,
  });
  const image = realm.upload(bo.userId, 'weekly-chart.png', demoChartPng(), 'image/png');
  const chart = send({
    senderId: bo.userId,
    type: 'stream',
    stream: 'engineering',
    topic: 'deploys',
    content: `Weekly deploy chart :chart:\n[weekly-chart.png](${image.url})`,
  });
  realm.addReaction(cy.userId, chart, '+1');
  send({
    senderId: cy.userId,
    type: 'stream',
    stream: 'engineering',
    topic: 'deploys',
    content: `${mention(bot)} what changed between the last two deploys?`,
  });
  return {
    botId: bot.userId,
    users: Object.fromEntries(people.map((p) => [p.fullName.split(' ')[0]?.toLowerCase() ?? '', p.userId])),
    streams: Object.fromEntries(Object.entries(streams).map(([name, s]) => [name, s.streamId])),
    imageUrl: image.url,
    messageCount: ids.length,
  };
}

/** A simulator started by {@link startDemoSim}, and what its demo seed created. */
export interface DemoSim {
  sim: ZulipSim;
  demo: DemoRealmInfo;
}

/**
 * Starts the simulator seeded with {@link seedDemoRealm}: what the CLI and the apps' `--demo`
 * run. Every option of `startZulipSim` but `seed` applies (`port` 0 by default).
 *
 * @throws SimError `SIM_LISTEN_FAILED` when the port cannot be opened.
 */
export async function startDemoSim(options: Omit<ZulipSimOptions, 'seed'> = {}): Promise<DemoSim> {
  let demo: DemoRealmInfo | undefined;
  const sim = await startZulipSim({
    ...options,
    seed(realm) {
      demo = seedDemoRealm(realm);
    },
  });
  // startZulipSim runs the seed before it resolves.
  return { sim, demo: demo as DemoRealmInfo };
}
