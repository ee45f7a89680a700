import { describe, expect, it } from 'vitest';
import { isUploadError } from './errors.js';
import {
  DEFAULT_MAX_FILE_BYTES,
  maxInlineAttachmentChars,
  parseByteSize,
  parseUploadMaxBytes,
  resolveMaxFileBytes,
} from './limits.js';

describe('parseUploadMaxBytes', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['  ', undefined],
    ['1', 1],
    ['26214400', 26214400],
    [' 512 ', 512],
    ['64K', 64 * 1024],
    ['64kib', 64 * 1024],
    ['25MiB', 25 * 1024 * 1024],
    ['100 M', 100 * 1024 * 1024],
    ['1GiB', 1024 ** 3],
  ])('parses %j as %j', (value, expected) => {
    expect(parseUploadMaxBytes(value)).toBe(expected);
  });

  it.each(['0', '-5', '1.5', 'ten', '25MB', '25 MiB extra', '99999999999999999999'])(
    'refuses %j',
    (value) => {
      let caught: unknown;
      try {
        parseUploadMaxBytes(value);
      } catch (err) {
        caught = err;
      }
      expect(isUploadError(caught, 'UPLOAD_CONFIG_INVALID')).toBe(true);
      expect((caught as { details: unknown }).details).toEqual({ variable: 'ZULIP_UPLOAD_MAX_BYTES' });
    },
  );
});

describe('parseByteSize', () => {
  it('is the grammar of every size setting, naming the setting it reads', () => {
    expect(parseByteSize('16KiB', 'ZULIP_PAGE_BUDGET_BYTES')).toBe(16_384);
    expect(parseByteSize('2b')).toBe(2);
    let caught: unknown;
    try {
      parseByteSize('16 kB', 'ZULIP_PAGE_BUDGET_BYTES');
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_CONFIG_INVALID')).toBe(true);
    expect((caught as Error).message).toMatch(/^ZULIP_PAGE_BUDGET_BYTES must be a positive number of bytes/);
  });
});

describe('maxInlineAttachmentChars', () => {
  it('is the base64 length of the per-message budget', () => {
    expect(maxInlineAttachmentChars(3)).toBe(16);
    expect(maxInlineAttachmentChars(DEFAULT_MAX_FILE_BYTES)).toBe(139_810_136);
    expect(Buffer.alloc(4 * 1000).toString('base64').length).toBe(maxInlineAttachmentChars(1000));
  });
});

describe('resolveMaxFileBytes', () => {
  it('prefers the override, then the realm, then 25 MiB', () => {
    expect(resolveMaxFileBytes({ override: '1000', realmMaxFileUploadSizeMib: 10 })).toBe(1000);
    expect(resolveMaxFileBytes({ realmMaxFileUploadSizeMib: 10 })).toBe(10 * 1024 * 1024);
    expect(resolveMaxFileBytes({})).toBe(DEFAULT_MAX_FILE_BYTES);
    expect(resolveMaxFileBytes({ realmMaxFileUploadSizeMib: 0 })).toBe(DEFAULT_MAX_FILE_BYTES);
  });
});
