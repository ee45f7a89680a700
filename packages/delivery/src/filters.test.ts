import { describe, expect, it } from 'vitest';
import {
  applyFiltersPatch,
  CompiledFilters,
  digestList,
  filtersSeedFromEnv,
  parseFiltersDocument,
  toolView,
} from './filters.js';

const general = { streamId: 12, name: 'General' };
const random = { streamId: 13, name: 'random' };

describe('filters documents', () => {
  it('accepts every key as a list and refuses wrong types and unknown keys', () => {
    const doc = parseFiltersDocument({
      streams: ['general', 13],
      dmUsers: ['42', 'ann@example.com', 7],
      mutedStreams: ['random'],
      reactionChannels: ['zulip:general', 'zulip:dm:4,9'],
      suppressedReactionEmojis: ['biohazard', '☣️'],
    });
    expect(doc.streams).toEqual(['general', 13]);
    for (const bad of [
      { streams: 'general' },
      { streams: [''] },
      { streams: [true] },
      { dmUsers: ['not an email'] },
      { mutedStreams: {} },
      { reactionChannels: ['general'] },
      { reactionChannels: ['zulip:dm:9,4'] },
      { suppressedReactionEmojis: [' biohazard'] },
      { mutedStream: ['random'] },
      [],
      null,
    ]) {
      expect(() => parseFiltersDocument(bad), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'DELIVERY_FILTERS_INVALID' }),
      );
    }
  });

  it('names the wrong key, never its value', () => {
    try {
      parseFiltersDocument({ streams: [{ secret: 'x' }] });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toContain('streams.0');
      expect((err as Error).message).not.toContain('secret');
    }
  });

  it('a patch replaces keys, null removes one, and the operator key cannot be touched', () => {
    const doc = parseFiltersDocument({ streams: ['a'], suppressedReactionEmojis: ['biohazard'] });
    const next = applyFiltersPatch(doc, { streams: null, mutedStreams: ['b'] });
    expect(next).toEqual({ mutedStreams: ['b'], suppressedReactionEmojis: ['biohazard'] });
    expect(toolView(next)).toEqual({ mutedStreams: ['b'] });
    expect(() => applyFiltersPatch(doc, { suppressedReactionEmojis: [] } as never)).toThrow(
      expect.objectContaining({ code: 'DELIVERY_FILTERS_OPERATOR_ONLY' }),
    );
    expect(() => applyFiltersPatch(doc, { other: [] } as never)).toThrow(
      expect.objectContaining({ code: 'DELIVERY_FILTERS_INVALID' }),
    );
    expect(() => applyFiltersPatch(doc, { streams: 'x' } as never)).toThrow(
      expect.objectContaining({ code: 'DELIVERY_FILTERS_INVALID' }),
    );
  });

  it('digests a list by its sorted unique entries', () => {
    expect(digestList([])).toEqual({ count: 0, digest: '' });
    const a = digestList(['b', 'a', 'a']);
    expect(a.count).toBe(2);
    expect(a.digest).toMatch(/^[0-9a-f]{16}$/);
    expect(digestList(['a', 'b']).digest).toBe(a.digest);
    expect(digestList(['a', 'c']).digest).not.toBe(a.digest);
  });
});

describe('CompiledFilters', () => {
  it('an absent key is unrestricted; a stream list allows by id or by name, ignoring case', () => {
    const open = new CompiledFilters({});
    expect(open.allowsStream(general)).toBe(true);
    expect(open.dmList).toBeUndefined();
    const only = new CompiledFilters({ streams: ['general', 13] });
    expect(only.allowsStream(general)).toBe(true);
    expect(only.allowsStream(random)).toBe(true);
    expect(only.allowsStream({ streamId: 14, name: 'other' })).toBe(false);
    expect(new CompiledFilters({ streams: [] }).allowsStream(general)).toBe(false);
  });

  it('matches a stream name as Zulip does, up to case only: a look-alike spelled otherwise is another stream', () => {
    // Zulip keeps stream names unique only up to case, so anyone may create `cafe\u0301` beside
    // `café`; an entry naming one must not let the other through, nor mute it, nor show its reactions.
    const decomposed = { streamId: 21, name: 'cafe\u0301' };
    const spaced = { streamId: 22, name: ' café ' };
    const f = new CompiledFilters({ streams: ['Café'], reactionChannels: ['zulip:café'] });
    expect(f.allowsStream({ streamId: 20, name: 'café' })).toBe(true);
    expect(f.allowsStream(decomposed)).toBe(false);
    expect(f.allowsStream(spaced)).toBe(false);
    expect(f.showsReactions({ streamName: 'CAFÉ' })).toBe(true);
    expect(f.showsReactions({ streamName: decomposed.name })).toBe(false);
    expect(new CompiledFilters({ mutedStreams: ['café'] }).isMuted(decomposed)).toBe(false);
  });

  it('muted streams never pass; dmUsers is core’s admission list of ids and emails, and empty means anyone', () => {
    const f = new CompiledFilters({ mutedStreams: [12], dmUsers: ['42', 'Ann@Example.com', 7] });
    expect(f.isMuted(general)).toBe(true);
    expect(f.passesStream(general)).toBe(false);
    expect(f.passesStream(random)).toBe(true);
    expect(f.dmList).toEqual({ ids: [42, 7], emails: ['ann@example.com'] });
    expect(new CompiledFilters({ dmUsers: [] }).dmList).toBeUndefined();
    expect(() => parseFiltersDocument({ dmUsers: ['Ann Lee'] })).toThrow(/expected a user id or an email/);
  });

  it('reaction channels match stream names and DM participants', () => {
    const f = new CompiledFilters({ reactionChannels: ['zulip:general', 'zulip:dm:4,9'] });
    expect(f.showsReactions({ streamName: 'GENERAL' })).toBe(true);
    expect(f.showsReactions({ streamName: 'random' })).toBe(false);
    expect(f.showsReactions({ key: 'd4,9' })).toBe(true);
    expect(f.showsReactions({ key: 'd4' })).toBe(false);
  });

  it('suppresses by name, or a glyph on its code points, with the baseline on top', () => {
    const f = new CompiledFilters({ suppressedReactionEmojis: ['biohazard'] }, ['☣️', '👍🏽']);
    expect(
      f.suppresses({ emoji_name: 'biohazard', emoji_code: '2623', reaction_type: 'unicode_emoji' }),
    ).toBe(true);
    expect(
      f.suppresses({ emoji_name: 'radioactive', emoji_code: '2623', reaction_type: 'unicode_emoji' }),
    ).toBe(true);
    expect(
      f.suppresses({ emoji_name: 'thumbs_up', emoji_code: '1f44d-1f3fd', reaction_type: 'unicode_emoji' }),
    ).toBe(true);
    expect(
      f.suppresses({ emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' }),
    ).toBe(false);
    expect(f.suppresses({ emoji_name: 'party', emoji_code: '2623', reaction_type: 'realm_emoji' })).toBe(
      false,
    );
  });
});

describe('filtersSeedFromEnv', () => {
  it('reads comma lists and JSON lists; unset variables stay unrestricted', () => {
    const { seed, baseline } = filtersSeedFromEnv({
      ZULIP_STREAMS: 'general, dev',
      ZULIP_DM_USERS: '42,ann@example.com',
      ZULIP_MUTED_STREAMS: '["a, b"]',
      ZULIP_SUPPRESSED_REACTIONS_BASELINE: '☣️',
    });
    expect(seed).toEqual({
      streams: ['general', 'dev'],
      dmUsers: ['42', 'ann@example.com'],
      mutedStreams: ['a, b'],
    });
    expect(baseline).toEqual(['☣️']);
    expect(filtersSeedFromEnv({ ZULIP_STREAMS: '__ALL__' }).seed).toEqual({});
    expect(() => filtersSeedFromEnv({ ZULIP_REACTION_CHANNELS: 'general' })).toThrow(
      expect.objectContaining({ code: 'DELIVERY_FILTERS_INVALID' }),
    );
    expect(() => filtersSeedFromEnv({ ZULIP_STREAMS: ',,' })).toThrow(
      expect.objectContaining({ code: 'CORE_CONFIG_INVALID' }),
    );
  });
});
