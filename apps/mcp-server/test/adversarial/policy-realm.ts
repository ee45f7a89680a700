// A realm for the access policy (issue 10): streams the policy opens beside look-alikes it must
// keep closed (NFD, fullwidth, zero-width, a blank that is not a space, a case fold), a closed
// private stream, DMs, files posted only in closed places, and unique markers in everything
// closed, so a test can say "nothing of it was read" by looking for the markers.
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';

/** Names of the streams, as Zulip holds them. */
export const NAMES = {
  general: 'general',
  /** Private, opened by ZULIP_PRIVATE_STREAMS=café (NFC). */
  cafe: 'caf\u00e9',
  /** Private, closed: the same letters in NFD. */
  cafeNfd: 'cafe\u0301',
  /** Private, closed: fullwidth letters, `café` after NFKC. */
  cafeWide: '\uff43\uff41\uff46\u00e9',
  /** Private, closed: a zero-width space inside. */
  cafeZw: 'ca\u200bf\u00e9',
  /** Private, closed: a trailing braille blank, which looks like a space and is not one. */
  cafeBlank: 'caf\u00e9\u2800',
  /** Private, opened by ZULIP_PRIVATE_STREAMS=strasse. */
  strasse: 'strasse',
  /** Private, closed: `strasse` after full case folding. */
  strasseFold: 'stra\u00dfe',
  /** Private, closed; its name is metadata a refusal by id must not reveal. */
  secret: 'secret-plans-QXNAME',
  /** Public, in ZULIP_WRITE_STREAMS (NFC). */
  naive: 'na\u00efve',
  /** Public, readable, not in ZULIP_WRITE_STREAMS: the same letters in NFD. */
  naiveNfd: 'nai\u0308ve',
  /** Public, readable, bot subscribed, not in ZULIP_WRITE_STREAMS. */
  offlimits: 'offlimits',
  /** Public, readable, the bot not subscribed, not in ZULIP_WRITE_STREAMS. */
  nosub: 'nosub',
} as const;

/** The private streams the policy keeps closed (with ZULIP_PRIVATE_STREAMS=café,strasse). */
export const CLOSED_KEYS = ['cafeNfd', 'cafeWide', 'cafeZw', 'cafeBlank', 'strasseFold', 'secret'] as const;

/** The seeded realm and what the tests need to find in it. */
export interface PolicyRealm {
  sim: ZulipSim;
  botId: number;
  ownerId: number;
  annId: number;
  eliId: number;
  streamIds: Record<keyof typeof NAMES, number>;
  /** Markers in closed content: bodies, topics and file contents. None may reach the model. */
  markers: string[];
  /** Messages in closed streams and DMs. */
  closedMessageIds: number[];
  /** Messages the policy lets the bot read, by stream key. */
  openMessageIds: Partial<Record<keyof typeof NAMES, number[]>>;
  /** A DM from Ann to the bot (closed: DM reads need __ALL__). */
  dmId: number;
  files: {
    /** Posted only in the closed private stream. */
    closed: string;
    /** Posted only in a DM. */
    dm: string;
    /** Posted in #general. */
    open: string;
    /** Posted in the allowlisted private stream. */
    allowlisted: string;
    /** Posted in the closed stream and in #general. */
    both: string;
  };
  /** Paths (`/user_uploads/...`) of the files the policy keeps closed. */
  closedPaths: string[];
}

/** The marker carried by closed item `n`. */
const marker = (n: number) => `QXCLOSED${String(n).padStart(3, '0')}`;

/** Starts the simulator with the policy realm; close it with `sim.close()`. */
export async function startPolicyRealm(): Promise<PolicyRealm> {
  const out: Omit<PolicyRealm, 'sim'> = {
    botId: 0,
    ownerId: 0,
    annId: 0,
    eliId: 0,
    streamIds: {} as Record<keyof typeof NAMES, number>,
    markers: [],
    closedMessageIds: [],
    openMessageIds: {},
    dmId: 0,
    files: { closed: '', dm: '', open: '', allowlisted: '', both: '' },
    closedPaths: [],
  };
  const sim = await startZulipSim({
    rateLimit: false,
    requestLogSize: 0,
    seed(realm) {
      const owner = realm.addUser({ fullName: 'Olivia Owner', email: 'olivia@policy.example', role: 100 });
      const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@policy.example' });
      const eli = realm.addUser({ fullName: 'Eli Fox', email: 'eli@policy.example' });
      const bot = realm.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@policy.example',
        isBot: true,
        botOwnerId: owner.userId,
      });
      out.ownerId = owner.userId;
      out.annId = ann.userId;
      out.eliId = eli.userId;
      out.botId = bot.userId;
      const people = [owner.userId, ann.userId, eli.userId];
      const closedKeys: readonly string[] = CLOSED_KEYS;
      let n = 0;
      for (const [key, name] of Object.entries(NAMES) as [keyof typeof NAMES, string][]) {
        const inviteOnly = key.startsWith('cafe') || key.startsWith('strasse') || key === 'secret';
        const subscribers = key === 'nosub' ? people : [...people, bot.userId];
        const s = realm.addStream({ name, inviteOnly, subscribers });
        out.streamIds[key] = s.streamId;
        for (let i = 0; i < 3; i++) {
          const closed = closedKeys.includes(key);
          const tag = closed ? marker(n++) : `open-${key}-${i}`;
          if (closed) out.markers.push(tag);
          const id = realm.sendMessage({
            senderId: i === 0 ? owner.userId : ann.userId,
            type: 'stream',
            stream: name,
            topic: closed ? `plans ${tag}` : 'plans',
            content: `${closed ? 'closed' : 'open'} body ${tag} @**Helper Bot**`,
          });
          if (closed) out.closedMessageIds.push(id);
          else out.openMessageIds[key] = [...(out.openMessageIds[key] ?? []), id];
        }
      }

      const dmTag = marker(n++);
      out.markers.push(dmTag);
      out.dmId = realm.sendMessage({
        senderId: ann.userId,
        type: 'direct',
        to: [bot.userId],
        content: `dm body ${dmTag}`,
      });
      out.closedMessageIds.push(out.dmId);

      // Files: Zulip links a file to a message its uploader sends, so each uploader posts its own.
      const file = (key: string, closed: boolean) => {
        const tag = closed ? marker(n++) : `open-file-${key}`;
        if (closed) out.markers.push(tag);
        return realm.upload(owner.userId, `${key}.txt`, Buffer.from(`file ${key} ${tag}\n`), 'text/plain')
          .url;
      };
      const post = (stream: string, url: string) =>
        realm.sendMessage({
          senderId: owner.userId,
          type: 'stream',
          stream,
          topic: 'files',
          content: `[f](${url})`,
        });
      out.files.closed = file('closed', true);
      out.closedMessageIds.push(post(NAMES.secret, out.files.closed));
      out.files.dm = file('dm', true);
      out.closedMessageIds.push(
        realm.sendMessage({
          senderId: owner.userId,
          type: 'direct',
          to: [bot.userId],
          content: `[f](${out.files.dm})`,
        }),
      );
      out.files.open = file('open', false);
      post(NAMES.general, out.files.open);
      out.files.allowlisted = file('allowlisted', false);
      post(NAMES.cafe, out.files.allowlisted);
      out.files.both = file('both', false);
      out.closedMessageIds.push(post(NAMES.secret, out.files.both));
      post(NAMES.general, out.files.both);
      out.closedPaths = [out.files.closed, out.files.dm];
    },
  });
  return { sim, ...out };
}
