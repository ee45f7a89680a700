import { ZmcpError } from '../errors.js';
import type { FormattableMessage } from './message.js';

const HASH_REPLACEMENTS: Readonly<Record<string, string>> = {
  '%': '.',
  '!': '.21',
  "'": '.27',
  '(': '.28',
  ')': '.29',
  '*': '.2A',
  '.': '.2E',
};

/**
 * Encodes one operand of a Zulip narrow URL the way Zulip does (web `encodeHashComponent`, server
 * `encode_hash_component`): percent-encode, then write `%` as `.` and encode `.`, `(`, `)`, `!`, `'`
 * and `*` too, so only letters, digits, `-`, `_` and `~` stay literal. `deploys v2.1` →
 * `deploys.20v2.2E1`. Decoding is "replace every `.` with `%`, then percent-decode".
 */
export function encodeHashComponent(value: string): string {
  return encodeURIComponent(value).replace(/[%!'()*.]/g, (ch) => HASH_REPLACEMENTS[ch] as string);
}

/** Decodes an operand written by {@link encodeHashComponent}; `undefined` when it is malformed. */
export function decodeHashComponent(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replaceAll('.', '%'));
  } catch {
    return undefined;
  }
}

/** What a permalink points at: a stream (optionally a topic) or a DM conversation. */
export type PermalinkTarget =
  | {
      readonly streamId: number;
      /** Readable hint after the id (`12-general`); Zulip parses only the id. */
      readonly streamName?: string | undefined;
      readonly topic?: string | undefined;
      readonly messageId?: number | undefined;
      /** `with` instead of `near`: follows the message if it is moved later. Default `false`. */
      readonly conversation?: boolean | undefined;
    }
  | {
      /** Every participant, the reader included (as in a DM's `display_recipient`). */
      readonly dmUserIds: readonly number[];
      readonly messageId?: number | undefined;
      readonly conversation?: boolean | undefined;
    };

function checkId(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `${what} must be a non-negative integer, got ${String(value)}.`,
      {
        details: { [what]: value },
      },
    );
  }
  return value;
}

function siteBase(site: string): string {
  let url: URL;
  try {
    url = new URL(site);
  } catch (cause) {
    throw new ZmcpError('CORE_INVALID_ARGUMENT', `Site ${JSON.stringify(site)} is not a URL.`, {
      cause,
      details: { site },
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ZmcpError('CORE_INVALID_ARGUMENT', `Site ${JSON.stringify(site)} must be an http(s) URL.`, {
      details: { site },
    });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * A link into the Zulip web app, encoded exactly as Zulip writes its own links:
 * `https://zulip.example/#narrow/channel/12-general/topic/deploys.20v2/near/4710` for a stream
 * (spaces in the stream hint become `-`, then both operands are hash-encoded) and
 * `https://zulip.example/#narrow/dm/8,21-dm/near/4711` for a DM (participant ids ascending,
 * `-dm` for one or two people, `-group` for three or more). Without `messageId` it links the
 * stream, topic or conversation itself.
 *
 * @throws `CORE_INVALID_ARGUMENT` when `site` is not an http(s) URL, an id is not a non-negative
 *   integer, or a DM has no participants.
 */
export function permalink(site: string, target: PermalinkTarget): string {
  const base = `${siteBase(site)}/#narrow/`;
  let path: string;
  if ('dmUserIds' in target) {
    if (target.dmUserIds.length === 0) {
      throw new ZmcpError('CORE_INVALID_ARGUMENT', 'A DM permalink needs at least one participant.', {
        details: { dmUserIds: [] },
      });
    }
    const ids = [...new Set(target.dmUserIds.map((id) => checkId(id, 'dmUserIds')))].sort((a, b) => a - b);
    path = `dm/${ids.join(',')}-${ids.length >= 3 ? 'group' : 'dm'}`;
  } else {
    const id = checkId(target.streamId, 'streamId');
    const hint =
      target.streamName === undefined || target.streamName === ''
        ? ''
        : `-${target.streamName.replaceAll(' ', '-')}`;
    path = `channel/${encodeHashComponent(`${id}${hint}`)}`;
    if (target.topic !== undefined) path += `/topic/${encodeHashComponent(target.topic)}`;
  }
  if (target.messageId !== undefined) {
    path += `/${target.conversation === true ? 'with' : 'near'}/${checkId(target.messageId, 'messageId')}`;
  }
  return base + path;
}

/**
 * {@link permalink} for a message object: its stream and topic (needs `stream_id`) or its DM
 * participants, and its id.
 *
 * @throws `CORE_INVALID_ARGUMENT` as {@link permalink}, or for a stream message without `stream_id`.
 */
export function messagePermalink(
  site: string,
  message: Pick<FormattableMessage, 'id' | 'type' | 'display_recipient' | 'subject' | 'stream_id'>,
  options: { readonly conversation?: boolean | undefined } = {},
): string {
  if (message.type === 'stream') {
    if (message.stream_id === undefined) {
      throw new ZmcpError('CORE_INVALID_ARGUMENT', `Message ${message.id} has no stream_id to link to.`, {
        details: { messageId: message.id },
      });
    }
    return permalink(site, {
      streamId: message.stream_id,
      streamName: String(message.display_recipient),
      topic: message.subject,
      messageId: message.id,
      conversation: options.conversation,
    });
  }
  const recipients = Array.isArray(message.display_recipient) ? message.display_recipient : [];
  return permalink(site, {
    dmUserIds: recipients.map((r) => r.id),
    messageId: message.id,
    conversation: options.conversation,
  });
}

/** Longest message link accepted from Zulip. */
const MAX_LINK_LENGTH = 4096;
/** What a narrow link holds after `#narrow/` once hash-encoded: nothing that needs escaping. */
const NARROW_PATH = /^[A-Za-z0-9._~,/-]+$/;

/**
 * The message link Zulip returned (`message_url` in the answer of `POST /messages`, feature level
 * 508), when it is one: a `#narrow/` link on `site`'s own origin made only of the characters
 * Zulip's hash encoding leaves (letters, digits, `.`, `-`, `_`, `~`, `,` and `/`), so it prints as
 * it is. Anything else (absent, another origin, stray characters) is `undefined`, and the caller
 * builds the link with {@link permalink}.
 */
export function checkedMessageUrl(url: unknown, site: string): string | undefined {
  if (typeof url !== 'string' || url.length > MAX_LINK_LENGTH) return undefined;
  let base: string;
  try {
    base = `${siteBase(site)}/#narrow/`;
  } catch {
    return undefined;
  }
  if (!url.startsWith(base)) return undefined;
  return NARROW_PATH.test(url.slice(base.length)) ? url : undefined;
}
