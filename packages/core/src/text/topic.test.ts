import { describe, expect, it } from 'vitest';
import { checkTopicName, MAX_TOPIC_LENGTH } from './topic.js';

describe('checkTopicName', () => {
  it('returns the trimmed topic', () => {
    expect(checkTopicName('  deploys  ')).toBe('deploys');
  });

  it('counts code points: 60 astral characters fit, 61 do not', () => {
    expect(checkTopicName('😀'.repeat(MAX_TOPIC_LENGTH))).toHaveLength(120);
    expect(() => checkTopicName('😀'.repeat(61))).toThrow(
      expect.objectContaining({
        code: 'CORE_INVALID_ARGUMENT',
        details: { field: 'topic', length: 61, limit: 60 },
      }),
    );
  });

  it.each([
    ['', 'is empty'],
    ['   ', 'is empty'],
    ['(no topic)', 'is empty'],
    ['two\nlines', 'control character'],
    ['tab\there', 'control character'],
  ])('refuses %j (%s), naming the field', (raw, why) => {
    expect(() => checkTopicName(raw, { field: 'new_topic' })).toThrow(new RegExp(`^new_topic .*${why}`));
  });

  it('takes the realm’s own limit', () => {
    expect(() => checkTopicName('abcdef', { maxLength: 5 })).toThrow(
      /6 characters long but Zulip keeps at most 5/,
    );
  });
});
