import { describe, expect, it } from 'vitest';
import { decodeBase64, measureBase64 } from './base64.js';
import { isUploadError } from './errors.js';

function roundTrip(bytes: Buffer): void {
  const encoded = bytes.toString('base64');
  const measure = measureBase64(encoded);
  expect(measure.decodedBytes).toBe(bytes.length);
  expect(decodeBase64(encoded, measure).equals(bytes)).toBe(true);
}

function badBase64(data: string): unknown {
  try {
    measureBase64(data);
  } catch (err) {
    return err;
  }
  throw new Error(`accepted ${JSON.stringify(data)}`);
}

describe('measureBase64', () => {
  it('gives the exact decoded size for every padding case', () => {
    for (let n = 0; n < 40; n++)
      roundTrip(Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff)));
  });

  it('accepts unpadded base64 and measures it exactly', () => {
    expect(measureBase64('QQ').decodedBytes).toBe(1);
    expect(measureBase64('QUI').decodedBytes).toBe(2);
    expect(decodeBase64('QUI', measureBase64('QUI')).toString()).toBe('AB');
  });

  it('accepts and strips MIME-style line breaks and spaces', () => {
    const bytes = Buffer.from('hello, attachment world; '.repeat(20));
    const wrapped = bytes.toString('base64').replace(/.{76}/g, '$&\r\n').concat('\n  ');
    const measure = measureBase64(wrapped);
    expect(measure).toEqual({ decodedBytes: bytes.length, hasWhitespace: true });
    expect(decodeBase64(wrapped, measure).equals(bytes)).toBe(true);
  });

  it('measures a huge string from its length alone', () => {
    // 8 MiB of base64 is measured at 6 MiB without a decoded copy ever being made.
    const huge = 'A'.repeat(8 * 1024 * 1024);
    expect(measureBase64(huge).decodedBytes).toBe(6 * 1024 * 1024);
  });

  it.each([
    ['a character outside the alphabet', 'QUJD*EFG', /unexpected character "\*" at offset 4/],
    ['base64url characters', 'ab-_', /unexpected character "-"/],
    ['a control character', 'QU\u0000I', /U\+0000/],
    ['data after padding', 'QQ==QUJD', /after "=" padding/],
    ['three padding characters', 'Q===', /dangling|padding/],
    ['padding that does not complete a quantum', 'QUJ==', /padding/],
    ['padding alone', '==', /padding/],
    ['a dangling character', 'QUJDR', /dangling/],
    ['a data: URL', 'data:image/png;base64,iVBORw0KGgo=', /not a data: URL/],
    ['non-ASCII text', 'QUJDé', /unexpected character/],
  ])('refuses %s', (_what, data, message) => {
    const err = badBase64(data);
    expect(isUploadError(err, 'UPLOAD_BAD_BASE64')).toBe(true);
    expect((err as Error).message).toMatch(message);
  });
});
