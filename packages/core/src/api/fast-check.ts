import type { MessageEvent } from './events.js';
import type { Message } from './schemas.js';

// Allocation-free guards for the hot paths (GET /messages, `message` events). Each accepts only
// values its zod schema accepts, and returns the value itself instead of zod's copy; anything it
// does not accept goes to zod, which then decides and explains. `fast-check.test.ts` holds the
// guards to that promise, field by field, against the schemas.

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';

function arrayOf(v: unknown, item: (x: unknown) => boolean): boolean {
  if (!Array.isArray(v)) return false;
  for (const x of v) if (!item(x)) return false;
  return true;
}

const optStr = (v: unknown) => v === undefined || isStr(v);
const optNum = (v: unknown) => v === undefined || isNum(v);
const optInt = (v: unknown) => v === undefined || isInt(v);
const optBool = (v: unknown) => v === undefined || isBool(v);

const isRecipient = (v: unknown) => isObj(v) && isInt(v.id) && isStr(v.email) && isStr(v.full_name);
const isReaction = (v: unknown) =>
  isObj(v) && isStr(v.emoji_name) && isStr(v.emoji_code) && isStr(v.reaction_type) && isInt(v.user_id);
const isTopicLink = (v: unknown) => isObj(v) && isStr(v.text) && isStr(v.url);
const isEditEntry = (v: unknown) => isObj(v) && isNum(v.timestamp);

/** True only for values `MessageSchema` accepts. */
export function isMessageFast(v: unknown): v is Message {
  if (!isObj(v)) return false;
  const r = v.display_recipient;
  return (
    isInt(v.id) &&
    (v.type === 'stream' || v.type === 'private') &&
    isInt(v.sender_id) &&
    isStr(v.sender_email) &&
    isStr(v.sender_full_name) &&
    (isStr(r) || arrayOf(r, isRecipient)) &&
    isStr(v.subject) &&
    isStr(v.content) &&
    isNum(v.timestamp) &&
    optInt(v.stream_id) &&
    optStr(v.content_type) &&
    optInt(v.recipient_id) &&
    optStr(v.sender_realm_str) &&
    (v.topic_links === undefined || arrayOf(v.topic_links, isTopicLink)) &&
    (v.reactions === undefined || arrayOf(v.reactions, isReaction)) &&
    (v.submessages === undefined || Array.isArray(v.submessages)) &&
    optBool(v.is_me_message) &&
    optStr(v.client) &&
    (v.avatar_url === undefined || v.avatar_url === null || isStr(v.avatar_url)) &&
    optNum(v.last_edit_timestamp) &&
    optNum(v.last_moved_timestamp) &&
    (v.edit_history === undefined || arrayOf(v.edit_history, isEditEntry)) &&
    (v.flags === undefined || arrayOf(v.flags, isStr)) &&
    optStr(v.match_content) &&
    optStr(v.match_subject)
  );
}

/** True only for values `MessageEventSchema` accepts. */
export function isMessageEventFast(v: unknown): v is MessageEvent {
  return (
    isObj(v) &&
    v.type === 'message' &&
    isInt(v.id) &&
    (v.flags === undefined || arrayOf(v.flags, isStr)) &&
    optStr(v.local_message_id) &&
    isMessageFast(v.message)
  );
}

/** True for a list of messages every one of which {@link isMessageFast} accepts. */
export function isMessageListFast(v: unknown): v is Message[] {
  return arrayOf(v, isMessageFast);
}

/** True for a GET /events envelope: `events` a list of objects with a string `type` and an integer `id`. */
export function isEventListFast(v: unknown): v is { type: string; id: number }[] {
  return arrayOf(v, (e) => isObj(e) && isStr(e.type) && isInt(e.id));
}

const optBoolField = (v: unknown) => v === undefined || isBool(v);

/** True only for bodies `GetMessagesResponseSchema` accepts. */
export function isGetMessagesResponseFast(v: unknown): boolean {
  return (
    isObj(v) &&
    isMessageListFast(v.messages) &&
    optNum(v.anchor) &&
    optBoolField(v.found_anchor) &&
    optBoolField(v.found_oldest) &&
    optBoolField(v.found_newest) &&
    optBoolField(v.history_limited)
  );
}

/** True only for bodies `GetMessageResponseSchema` accepts. */
export function isGetMessageResponseFast(v: unknown): boolean {
  return isObj(v) && isMessageFast(v.message) && optStr(v.raw_content);
}

/** True only for bodies `GetEventsResponseSchema` accepts. */
export function isGetEventsResponseFast(v: unknown): boolean {
  return isObj(v) && isEventListFast(v.events) && optStr(v.queue_id);
}
