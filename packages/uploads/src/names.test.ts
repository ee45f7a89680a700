import { describe, expect, it } from 'vitest';
import { isUploadError } from './errors.js';
import { checkFileName } from './names.js';

describe('checkFileName', () => {
  it('accepts ordinary names, including spaces, brackets and non-ASCII', () => {
    for (const name of ['chart.png', 'Q3 report [final].pdf', 'résumé.txt', 'a'.repeat(255), '..hidden']) {
      expect(checkFileName(name)).toBe(name);
    }
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['a'.repeat(256), /longer/],
    ['../etc/passwd', /separator/],
    ['dir\\file', /separator/],
    ['line\nbreak.txt', /control/],
    ['bell\u0007', /control/],
    ['..', /relative/],
  ])('refuses %j', (name, message) => {
    let caught: unknown;
    try {
      checkFileName(name);
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_INVALID_NAME')).toBe(true);
    expect((caught as Error).message).toMatch(message);
  });
});
