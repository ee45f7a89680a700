import { UploadError } from './errors.js';

/** What {@link measureBase64} learned about a base64 string without decoding it. */
export interface Base64Measure {
  /** Exact number of bytes the string decodes to. */
  decodedBytes: number;
  /** Whether the string carries whitespace that must be stripped before decoding. */
  hasWhitespace: boolean;
}

// 0 = invalid, 1 = alphabet, 2 = padding, 3 = whitespace (MIME line breaks and the like).
const CLASS = new Uint8Array(128);
for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')
  CLASS[ch.charCodeAt(0)] = 1;
CLASS['='.charCodeAt(0)] = 2;
for (const ch of ' \t\r\n\f\v') CLASS[ch.charCodeAt(0)] = 3;

function bad(reason: string, details: Record<string, unknown>): UploadError {
  return new UploadError('UPLOAD_BAD_BASE64', `inline data is not valid base64: ${reason}`, { details });
}

/**
 * Validates standard base64 (RFC 4648 alphabet, whitespace ignored, padding optional but only at
 * the end) and returns the exact decoded size, in one pass over the string and without decoding.
 *
 * @throws {UploadError} `UPLOAD_BAD_BASE64` naming the first bad character or the bad padding.
 */
export function measureBase64(data: string): Base64Measure {
  let significant = 0;
  let padding = 0;
  let hasWhitespace = false;
  for (let i = 0; i < data.length; i++) {
    const code = data.charCodeAt(i);
    const kind = code < 128 ? CLASS[code]! : 0;
    if (kind === 1) {
      if (padding > 0) throw bad('data continues after "=" padding', { offset: i });
      significant++;
    } else if (kind === 2) {
      padding++;
    } else if (kind === 3) {
      hasWhitespace = true;
    } else {
      if (i === 4 && data.startsWith('data:')) {
        throw bad('send only the base64 payload, not a data: URL', { offset: 0 });
      }
      const shown = code < 32 || code === 127 ? `U+${code.toString(16).padStart(4, '0')}` : data[i];
      throw bad(`unexpected character ${JSON.stringify(shown)} at offset ${i}`, { offset: i });
    }
  }
  const remainder = significant % 4;
  if (remainder === 1) throw bad('its length leaves a dangling character', { length: significant });
  if (padding > 0 && (padding > 2 || (significant + padding) % 4 !== 0)) {
    throw bad('wrong number of "=" padding characters', { padding });
  }
  const decodedBytes = Math.floor(significant / 4) * 3 + (remainder === 0 ? 0 : remainder - 1);
  return { decodedBytes, hasWhitespace };
}

/** Decodes base64 that {@link measureBase64} accepted into exactly `measure.decodedBytes` bytes. */
export function decodeBase64(data: string, measure: Base64Measure): Buffer {
  const clean = measure.hasWhitespace ? data.replace(/[ \t\r\n\f\v]+/g, '') : data;
  const bytes = Buffer.from(clean, 'base64');
  if (bytes.length !== measure.decodedBytes) {
    throw bad('it decoded to an unexpected length', {
      expected: measure.decodedBytes,
      actual: bytes.length,
    });
  }
  return bytes;
}
