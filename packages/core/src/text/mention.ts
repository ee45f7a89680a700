import { ZmcpError } from '../errors.js';
import { foldHeaderField } from './unicode.js';

/** The user fields a mention needs. */
export interface MentionableUser {
  readonly user_id: number;
  readonly full_name: string;
}

/** Options for {@link mentionSyntax}. */
export interface MentionOptions {
  /** A silent mention (`@_**…**`) names the user without notifying them. Default `false`. */
  readonly silent?: boolean | undefined;
}

/**
 * Zulip's mention syntax for a user: `@**Full Name|id**` (or `@_**Full Name|id**` when silent). The
 * id makes it unambiguous when names repeat. A name Zulip's mention pattern cannot carry (one with
 * `*`, `|`, or a line break) is written by id alone, `@**|id**`, which Zulip renders with the
 * current name.
 *
 * @throws `CORE_INVALID_ARGUMENT` when `user_id` is not a positive integer.
 */
export function mentionSyntax(user: MentionableUser, options: MentionOptions = {}): string {
  if (!Number.isSafeInteger(user.user_id) || user.user_id < 1) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Cannot mention user id ${String(user.user_id)}: not a positive integer.`,
      {
        details: { userId: user.user_id },
      },
    );
  }
  const prefix = options.silent === true ? '@_**' : '@**';
  const name = foldHeaderField(user.full_name).trim();
  const safe = name !== '' && !/[*|\n]/.test(user.full_name) && name === user.full_name.trim();
  return `${prefix}${safe ? name : ''}|${user.user_id}**`;
}
