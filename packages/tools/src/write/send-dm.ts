import { quoteName, quotePerson, type User, ZmcpError } from '@zmcp/core';
import { AttachmentsSchema } from '@zmcp/uploads';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  ATTACHMENTS_HELP,
  assertWritable,
  attachmentsNote,
  ContentArgSchema,
  callOf,
  RepeatArgSchema,
  sendAndShow,
} from './common.js';
import { preparePost } from './post.js';

/** Zulip's group DMs are capped well below this; it bounds the lookups of one call. */
const MAX_RECIPIENTS = 20;

const RecipientSchema = z.union([z.number().int().positive().max(2_147_483_647), z.string().min(1).max(200)]);

const inputSchema = z.object({
  to: z
    .array(RecipientSchema)
    .min(1)
    .max(MAX_RECIPIENTS)
    .describe('Recipients by user id, email, exact full name or @**Name|id**; several make a group DM'),
  content: ContentArgSchema.optional().describe('Zulip Markdown'),
  attachments: AttachmentsSchema.optional().describe(ATTACHMENTS_HELP),
  repeat: RepeatArgSchema,
});

const outputSchema = z.object({
  message_id: z.number().int(),
  permalink: z.string().nullable(),
  recipient_ids: z.array(z.number().int()),
  attachments: z.number().int().describe('Files uploaded and linked'),
  normalized: z.boolean().describe('The Markdown fixes changed the text'),
  length: z.number().int().describe('Code points sent'),
  limit: z.number().int().describe("The realm's limit"),
});

async function resolveRecipients(
  services: ToolServices,
  refs: readonly (string | number)[],
  signal: AbortSignal,
): Promise<User[]> {
  const found = new Map<number, User>();
  for (const [index, ref] of refs.entries()) {
    let user: User;
    let deactivated: boolean;
    try {
      // A write goes only to an id, an email or an exact full name: display names are anyone's to choose.
      const resolved = await services.directory.user(ref, callOf(signal), { exact: true });
      user = resolved.user;
      deactivated = resolved.deactivated;
    } catch (err) {
      if (
        err instanceof ZmcpError &&
        (err.code === 'CORE_USER_AMBIGUOUS' || err.code === 'CORE_USER_NOT_FOUND')
      ) {
        throw new ZmcpError(err.code, `to[${index}]: ${err.message}`, {
          cause: err,
          ...(err.details === undefined ? {} : { details: { ...err.details, index } }),
        });
      }
      throw err;
    }
    if (deactivated) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        `to[${index}]: ${quoteName(user.full_name, 'person')} (id ${user.user_id}) is deactivated and cannot receive messages.`,
        { field: `to.${index}` },
      );
    }
    found.set(user.user_id, user);
  }
  return [...found.values()];
}

/** `send_dm`: sends a direct message to one person or a group. */
export const sendDmTool = defineTool({
  name: 'send_dm',
  title: 'Send a direct message',
  description:
    'Send a direct message to one or more people. Markdown is fixed up; too long is refused, never cut. After a failure, read the DM first; the same text there again within minutes is refused unless repeat.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'write',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const _call = callOf(signal);
    assertWritable(services);
    const attachments = input.attachments ?? [];
    const users = await resolveRecipients(services, input.to, signal);
    const prepared = await preparePost(
      services,
      { kind: 'dm', userIds: users.map((u) => u.user_id) },
      input.content,
      { overLength: 'refuse', attachments, signal, repeat: input.repeat },
    );
    const sent = await sendAndShow(services, prepared, signal, users);
    if ('isError' in sent) return sent;
    const permalink = sent.permalink;
    const names = users
      .map((u) => quotePerson(u.full_name, u.user_id, 'member', services.directory.people))
      .join(', ');
    return {
      text: [
        `Sent direct message ${sent.id} to ${names}${attachmentsNote(sent.uploaded.length)}${permalink === null ? '' : ` (${permalink})`}.`,
        sent.line,
      ].join('\n'),
      data: {
        message_id: sent.id,
        permalink,
        recipient_ids: users.map((u) => u.user_id),
        attachments: sent.uploaded.length,
        normalized: sent.normalized,
        length: sent.length,
        limit: services.maxMessageLength,
      },
    };
  },
});
