/**
 * The Zulip API changes zmcp adapts to, each as the feature level that brought it (Zulip's API
 * changelog). A realm below the level answers as the older server did; callers ask
 * {@link hasFeature} (or `ZulipClient.hasFeature`) and fall back to the older way.
 */
export const ZULIP_FEATURES = {
  /** `GET /reminders`, `DELETE /reminders/{id}` beside `POST /reminders` (381): reminders a client can list and cancel. */
  reminders: 399,
  /** `note` on `POST /reminders`, and `max_reminder_note_length` (1000). */
  reminderNote: 415,
  /** `GET /users/{user_id}/channels`. */
  userChannels: 440,
  /** `can_create_topic_group` per channel: a sender outside it may not start a new topic. */
  topicCreationPermission: 441,
  /** Attachment times (`create_time`, `messages[].date_sent`) in seconds rather than milliseconds. */
  attachmentSeconds: 443,
  /** `anchor: "date"` with `anchor_date` on `GET /messages`. */
  dateAnchor: 445,
  /** The `mentions` narrow operator: messages with a direct mention of a user. */
  mentionsOperator: 446,
  /** Attachments list `message_ids` instead of `messages: [{ id, date_sent }]`. */
  attachmentMessageIds: 472,
  /** `message_url` and `message_link` in the answer of `POST /messages`. */
  messageUrl: 508,
} as const;

/** A Zulip API change zmcp adapts to; see {@link ZULIP_FEATURES}. */
export type ZulipFeature = keyof typeof ZULIP_FEATURES;

/** True when a realm at `featureLevel` has `feature`. */
export function hasFeature(featureLevel: number, feature: ZulipFeature): boolean {
  return featureLevel >= ZULIP_FEATURES[feature];
}
