import { formatTimestamp, isValidTimeZone, type ProfileField, quoteName, type User } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  callOptions,
  checkDeadline,
  READ_ANNOTATIONS,
  roleName,
  shortText,
  UserRefSchema,
} from './shared.js';

const NAME = 'get_user_profile';
const VALUE_CHARS = 300;

const InputSchema = z.object({
  user: UserRefSchema.optional().describe('User id, email or full name; omit for yourself'),
});

const OutputSchema = z.object({
  user_id: z.number().int(),
  role: z.enum(['owner', 'admin', 'moderator', 'member', 'guest']),
  is_bot: z.boolean(),
  bot_owner_id: z.number().int().nullable(),
  is_active: z.boolean(),
  is_self: z.boolean(),
  timezone: z.string().nullable(),
  local_time: z.string().nullable(),
});

interface ProfileValue {
  value?: unknown;
}

/** A custom profile value as text: select options by label, people by name, the rest as written. */
function fieldValue(field: ProfileField | undefined, raw: string, usersById: Map<number, User>): string {
  if (field?.type === 3 && field.field_data !== undefined) {
    try {
      const options = JSON.parse(field.field_data) as Record<string, { text?: unknown }>;
      const text = options[raw]?.text;
      if (typeof text === 'string') return text;
    } catch {
      // Not the JSON Zulip writes: show the raw value.
    }
  }
  if (field?.type === 6) {
    try {
      const ids = JSON.parse(raw) as unknown;
      if (Array.isArray(ids)) {
        return ids
          .map((id) => (typeof id === 'number' ? (usersById.get(id)?.full_name ?? `user ${id}`) : String(id)))
          .join(', ');
      }
    } catch {
      // Fall through to the raw value.
    }
  }
  return raw;
}

/** `get_user_profile`: one person's profile, or the bot's own. */
export const getUserProfileTool = defineTool({
  name: NAME,
  title: 'Get a user profile',
  description:
    "A person's profile: name, email, role, bot or human, time zone and local time, custom profile fields.",
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'browse',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const id =
      input.user === undefined
        ? services.identity.user_id
        : (await services.directory.user(input.user, call)).user.user_id;
    const [user, fields, users] = await Promise.all([
      services.client.getUser(id, { includeCustomProfileFields: true }, call),
      services.client.getCustomProfileFields(call),
      services.directory.users(call),
    ]);
    const usersById = new Map(users.map((u) => [u.user_id, u]));
    const fieldsById = new Map(fields.map((f) => [f.id, f]));
    const role = roleName(user.role, user) as z.infer<typeof OutputSchema>['role'];
    const owner =
      user.is_bot === true && typeof user.bot_owner_id === 'number'
        ? {
            user_id: user.bot_owner_id,
            full_name: usersById.get(user.bot_owner_id)?.full_name ?? `user ${user.bot_owner_id}`,
          }
        : null;
    const timezone = typeof user.timezone === 'string' && user.timezone !== '' ? user.timezone : null;
    const localTime =
      timezone !== null && isValidTimeZone(timezone)
        ? formatTimestamp(Math.floor(services.now() / 1000), { timeZone: timezone })
        : null;
    const profile: { id: number; name: string; value: string }[] = [];
    for (const [key, entry] of Object.entries(user.profile_data ?? {})) {
      const raw = (entry as ProfileValue | null)?.value;
      if (raw === undefined || raw === null || raw === '') continue;
      const fieldId = Number(key);
      const field = fieldsById.get(fieldId);
      profile.push({
        id: fieldId,
        name: field?.name ?? `field ${fieldId}`,
        value: fieldValue(field, String(raw), usersById),
      });
    }
    profile.sort((a, b) => (fieldsById.get(a.id)?.order ?? a.id) - (fieldsById.get(b.id)?.order ?? b.id));
    const isSelf = user.user_id === services.identity.user_id;

    const kind = user.is_bot === true ? 'bot' : 'human';
    const lines = [
      `${quoteName(user.full_name, 'person')} (${quoteName(user.email, 'member')}, id ${user.user_id}): ${role}, ${kind}${user.is_active === false ? ', deactivated' : ''}${isSelf ? ' — this is you' : ''}.`,
    ];
    if (owner !== null)
      lines.push(`Bot owner: ${quoteName(owner.full_name, 'person')} (id ${owner.user_id})`);
    lines.push(
      timezone === null
        ? 'Time zone: not set'
        : `Time zone: ${timezone}${localTime === null ? '' : `; local time now ${localTime}`}`,
    );
    if (user.date_joined !== undefined) lines.push(`Joined: ${user.date_joined}`);
    for (const f of profile) lines.push(`${shortText(f.name, 80)}: ${shortText(f.value, VALUE_CHARS)}`);
    return {
      text: lines.join('\n'),
      data: {
        user_id: user.user_id,
        role,
        is_bot: user.is_bot === true,
        bot_owner_id: owner?.user_id ?? null,
        is_active: user.is_active !== false,
        is_self: isSelf,
        timezone,
        local_time: localTime,
      },
    };
  },
});
