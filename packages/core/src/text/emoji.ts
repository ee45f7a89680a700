import { ZmcpError } from '../errors.js';

/** Longest emoji name accepted. */
export const MAX_EMOJI_NAME_LENGTH = 60;

const EMOJI_NAME = /^[0-9a-z_+-]+$/;

/**
 * The one rule for an emoji name as Zulip spells them (`thumbs_up`, `+1`, `robot_ear`, a realm
 * emoji's name): returns the name trimmed, without surrounding colons (`:tada:` → `tada`) and
 * lower-cased, when it is 1-60 of `a-z 0-9 _ + -`. Glyphs are not names; resolving them is the
 * caller's business.
 *
 * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` saying what is wrong (the value cut to 60
 *   characters); `details.field` is `options.field` when given.
 */
export function checkEmojiName(raw: string, options: { field?: string } = {}): string {
  const name =
    typeof raw === 'string'
      ? raw
          .trim()
          .replace(/^:(.*):$/, '$1')
          .toLowerCase()
      : '';
  if (name.length >= 1 && name.length <= MAX_EMOJI_NAME_LENGTH && EMOJI_NAME.test(name)) return name;
  const label = options.field ?? 'emoji name';
  const shown = typeof raw === 'string' ? JSON.stringify(raw.slice(0, MAX_EMOJI_NAME_LENGTH)) : typeof raw;
  throw new ZmcpError(
    'CORE_INVALID_ARGUMENT',
    `${label} ${shown} is not an emoji name: expected 1-${MAX_EMOJI_NAME_LENGTH} letters, digits, "_", "+" or "-", such as thumbs_up, +1 or robot_ear`,
    { details: options.field === undefined ? {} : { field: options.field } },
  );
}
