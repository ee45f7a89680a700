import { describe, expect, it } from 'vitest';
import { isUploadError } from './errors.js';
import { guessMimeType, resolveMimeType } from './mime.js';

describe('guessMimeType', () => {
  it.each([
    ['chart.png', 'image/png'],
    ['PHOTO.JPG', 'image/jpeg'],
    ['anim.gif', 'image/gif'],
    ['notes.md', 'text/markdown'],
    ['data.json', 'application/json'],
    ['report.pdf', 'application/pdf'],
    ['archive.tar.gz', 'application/gzip'],
    ['voice.ogg', 'audio/ogg'],
    ['README', 'application/octet-stream'],
    ['.bashrc', 'application/octet-stream'],
    ['trailing.', 'application/octet-stream'],
    ['weird.xyz123', 'application/octet-stream'],
  ])('%s -> %s', (name, type) => {
    expect(guessMimeType(name)).toBe(type);
  });
});

describe('resolveMimeType', () => {
  it('keeps a declared type and guesses a missing one', () => {
    expect(resolveMimeType('image/webp', 'x.bin')).toBe('image/webp');
    expect(resolveMimeType('text/plain; charset=utf-8', 'x')).toBe('text/plain; charset=utf-8');
    expect(resolveMimeType(undefined, 'x.png')).toBe('image/png');
  });

  it.each(['png', 'image/', 'image/png\r\nX-Injected: 1', 'image/png; charset', '', 'a b/c'])(
    'refuses %j',
    (declared) => {
      let caught: unknown;
      try {
        resolveMimeType(declared, 'x.png');
      } catch (err) {
        caught = err;
      }
      expect(isUploadError(caught, 'UPLOAD_INVALID_MIME_TYPE')).toBe(true);
    },
  );
});
