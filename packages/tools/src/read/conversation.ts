import {
  type CallOptions,
  dmOthers,
  isNoBotsTopic,
  type NarrowTerm,
  type PersonNames,
  quotePerson,
  type User,
} from '@zmcp/core';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { normalizeTopicInput, resolveStream, streamLabel, topicLabel } from './shared.js';

/** A conversation a history tool reads: a stream (or one of its topics) or a DM conversation. */
export interface Conversation {
  narrow: NarrowTerm[];
  /** `#general > deploys`, `#general`, `DM with Ann Lee`. */
  label: string;
  kind: 'stream' | 'dm';
}

/**
 * Resolves DM participants named by id, email or name into the other participants' user ids
 * (the bot itself is implied; naming only the bot reads its DMs with itself).
 * @throws ZmcpError `CORE_USER_NOT_FOUND`, `CORE_USER_AMBIGUOUS` (the message lists the candidates).
 */
export async function resolveDmUsers(
  services: ToolServices,
  refs: readonly (string | number)[],
  call: CallOptions,
): Promise<{ ids: number[]; users: User[] }> {
  const self = services.identity.user_id;
  const users: User[] = [];
  for (const ref of refs) {
    const { user } = await services.directory.user(ref, call);
    if (user.user_id !== self && !users.some((u) => u.user_id === user.user_id)) users.push(user);
  }
  return {
    ids: dmOthers(
      users.map((u) => ({ id: u.user_id })),
      self,
    ),
    users,
  };
}

/**
 * The label of a DM conversation with these users (the bot left out), each named as message
 * lines name them: with the user id where a name alone would not tell them apart.
 */
export function dmLabel(users: readonly Pick<User, 'user_id' | 'full_name'>[], people?: PersonNames): string {
  if (users.length === 0) return 'DM with yourself';
  return `DM with ${users.map((u) => quotePerson(u.full_name, u.user_id, 'member', people)).join(', ')}`;
}

/**
 * Builds the narrow of a stream (optionally one topic) or a DM conversation from tool input.
 * @throws ToolError `TOOLS_INVALID_INPUT` (neither or both named, a topic without a stream),
 *   `TOOLS_NOT_FOUND` (a stream the bot cannot see, or a topic that opted out of bots); ZmcpError
 *   `CORE_USER_NOT_FOUND` / `CORE_USER_AMBIGUOUS` for DM participants.
 */
export async function resolveConversation(
  services: ToolServices,
  input: {
    stream?: string | number | undefined;
    topic?: string | undefined;
    dm?: (string | number)[] | undefined;
  },
  call: CallOptions,
): Promise<Conversation> {
  const hasStream = input.stream !== undefined;
  const hasDm = input.dm !== undefined;
  if (hasStream === hasDm) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      hasStream
        ? 'Invalid arguments: stream and dm: name a stream or a DM conversation, not both.'
        : 'Invalid arguments: stream: name a stream (with an optional topic) or pass dm with the people of a DM conversation.',
    );
  }
  if (input.stream !== undefined) {
    const stream = await resolveStream(services, input.stream, call);
    const narrow: NarrowTerm[] = [{ operator: 'channel', operand: stream.stream_id }];
    let label = streamLabel(stream.name);
    if (input.topic !== undefined) {
      const topic = normalizeTopicInput(input.topic);
      if (isNoBotsTopic(topic)) {
        throw new ToolError(
          'TOOLS_NOT_FOUND',
          `Topic ${topicLabel(input.topic.slice(0, 100))} of ${streamLabel(stream.name)} is not available: its people asked bots to stay out (/nobots).`,
        );
      }
      narrow.push({ operator: 'topic', operand: topic });
      label += ` > ${topicLabel(topic)}`;
    }
    return { narrow, label, kind: 'stream' };
  }
  if (input.topic !== undefined) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      'Invalid arguments: topic: a topic needs its stream; DM conversations have no topics.',
    );
  }
  const { ids, users } = await resolveDmUsers(services, input.dm ?? [], call);
  return {
    narrow: [{ operator: 'dm', operand: ids }],
    label: dmLabel(users, services.directory.people),
    kind: 'dm',
  };
}
