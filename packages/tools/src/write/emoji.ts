import { type CallOptions, checkEmojiName, type Reaction } from '@zmcp/core';
import { z } from 'zod';
import { asToolInput, ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';

/** Zulip's three kinds of reaction. */
export const ReactionTypeSchema = z.enum(['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji']);
/** Zulip's three kinds of reaction. */
export type ReactionType = z.infer<typeof ReactionTypeSchema>;

/** An emoji argument: a name, `:name:`, or one of the common glyphs. */
export const EmojiArgSchema = z
  .string()
  .min(1)
  .max(100)
  .describe(
    'A name as Zulip spells it ("thumbs_up", "+1", "eyes", "check", a custom emoji) or a glyph such as 👍 ✅',
  );

// Common glyphs and their Zulip names, by code point sequence (U+FE0F dropped). Anything else
// must be given by name: a full table would be large, and Zulip needs the name anyway.
const GLYPHS: Readonly<Record<string, string>> = {
  '1f44d': '+1',
  '1f44e': '-1',
  '1f389': 'tada',
  '2764': 'heart',
  '1f642': 'smile',
  '1f600': 'grinning',
  '1f602': 'joy',
  '1f622': 'cry',
  '1f914': 'thinking',
  '2705': 'check',
  '274c': 'cross_mark',
  '1f440': 'eyes',
  '1f680': 'rocket',
  '1f525': 'fire',
  '1f44b': 'wave',
  '1f44f': 'clap',
  '1f64f': 'pray',
  '1f4af': '100',
  '26a0': 'warning',
  '2b50': 'star',
  '2728': 'sparkles',
  '1f41b': 'bug',
  '1f44c': 'ok',
  '1f6e0': 'working_on_it',
  '2753': 'question',
};

/** An emoji as the reaction endpoints take it. */
export interface EmojiRef {
  name: string;
  /** Known only for glyphs: the code point sequence. */
  code?: string;
  /** Known only for glyphs. */
  type?: ReactionType;
}

/**
 * Reads an emoji argument: `thumbs_up`, `:thumbs_up:`, or a common glyph.
 * @throws ToolError `TOOLS_INVALID_INPUT` for an unknown glyph or a malformed name.
 */
export function parseEmoji(raw: string): EmojiRef {
  const text = raw.trim();
  if (/[^\u0000-\u007f]/.test(text)) {
    const points = [...text.replaceAll('\ufe0f', '')].map((c) => (c.codePointAt(0) as number).toString(16));
    const code = points.join('-');
    const name = GLYPHS[code];
    if (name === undefined) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        `emoji ${JSON.stringify(text.slice(0, 16))} is not one of the glyphs this tool knows; pass the emoji's name instead, e.g. "thumbs_up", "tada", "eyes", "check", "heart" (custom emoji go by their name).`,
        { field: 'emoji' },
      );
    }
    return { name, code, type: 'unicode_emoji' };
  }
  return { name: asToolInput(() => checkEmojiName(text, { field: 'emoji' })) };
}

/**
 * Works out the reaction type and code of an emoji the way Zulip resolves a name: a custom
 * (realm) emoji of that name first, then Zulip's own `zulip` emoji, then Unicode. When the bot
 * already reacted with that name, its reaction decides.
 */
export async function resolveReaction(
  services: ToolServices,
  emoji: EmojiRef,
  given: ReactionType | undefined,
  ownReactions: readonly Reaction[],
  call: CallOptions,
): Promise<{ type: ReactionType; code: string | undefined }> {
  const mine = ownReactions.find(
    (r) => r.emoji_name === emoji.name && (given === undefined || r.reaction_type === given),
  );
  if (mine !== undefined && ReactionTypeSchema.safeParse(mine.reaction_type).success) {
    return { type: mine.reaction_type as ReactionType, code: mine.emoji_code };
  }
  if (given !== undefined) return { type: given, code: emoji.code };
  if (emoji.type !== undefined) return { type: emoji.type, code: emoji.code };
  const custom = (await services.client.getRealmEmoji(call)).find(
    (e) => e.name === emoji.name && !e.deactivated,
  );
  if (custom !== undefined) return { type: 'realm_emoji', code: custom.id };
  if (emoji.name === 'zulip') return { type: 'zulip_extra_emoji', code: 'zulip' };
  return { type: 'unicode_emoji', code: undefined };
}
