import { describe, expect, it } from 'vitest';
import { isZmcpError } from '../errors.js';
import { checkEmojiName } from './emoji.js';

describe('checkEmojiName', () => {
  it.each([
    ['thumbs_up', 'thumbs_up'],
    ['+1', '+1'],
    ['-1', '-1'],
    [' :tada: ', 'tada'],
    ['Robot_Ear', 'robot_ear'],
    ['t-rex', 't-rex'],
    ['x'.repeat(60), 'x'.repeat(60)],
  ])('accepts %j as %j', (raw, name) => {
    expect(checkEmojiName(raw)).toBe(name);
  });

  it.each(['', '::', 'thumbs up', '👍', 'tada!', ':tada', 'x'.repeat(61), 'a:b'])('refuses %j', (raw) => {
    let caught: unknown;
    try {
      checkEmojiName(raw, { field: 'ZULIP_DISMISS_EMOJI' });
    } catch (err) {
      caught = err;
    }
    expect(isZmcpError(caught, 'CORE_INVALID_ARGUMENT')).toBe(true);
    expect((caught as Error).message).toMatch(/^ZULIP_DISMISS_EMOJI ".*" is not an emoji name: expected/);
    expect((caught as { details: unknown }).details).toEqual({ field: 'ZULIP_DISMISS_EMOJI' });
  });
});
