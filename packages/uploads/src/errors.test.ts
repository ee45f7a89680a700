import { describe, expect, it } from 'vitest';
import { isUploadError, UploadError, type UploadErrorCode } from './errors.js';

const codes: UploadErrorCode[] = [
  'UPLOAD_CONFIG_INVALID',
  'UPLOAD_ROOT_MISSING',
  'UPLOAD_ROOT_CHANGED',
  'UPLOAD_NO_ROOTS',
  'UPLOAD_LOCAL_FILES_UNSUPPORTED',
  'UPLOAD_ABSOLUTE_PATH',
  'UPLOAD_UNKNOWN_ROOT',
  'UPLOAD_INVALID_PATH',
  'UPLOAD_PATH_ESCAPE',
  'UPLOAD_FILE_NOT_FOUND',
  'UPLOAD_FILE_UNREADABLE',
  'UPLOAD_NOT_REGULAR_FILE',
  'UPLOAD_FILE_CHANGED',
  'UPLOAD_BAD_BASE64',
  'UPLOAD_INVALID_ATTACHMENT',
  'UPLOAD_INVALID_NAME',
  'UPLOAD_INVALID_MIME_TYPE',
  'UPLOAD_TOO_LARGE',
  'UPLOAD_TOO_MANY_FILES',
  'UPLOAD_TOTAL_TOO_LARGE',
  'UPLOAD_FAILED',
  'UPLOAD_BAD_RESPONSE',
  'UPLOAD_BAD_DOWNLOAD_PATH',
  'UPLOAD_DOWNLOAD_FAILED',
  'UPLOAD_ABORTED',
];

describe('UploadError', () => {
  it.each(codes)('%s has name, code, details and cause', (code) => {
    const cause = new Error('root cause');
    const err = new UploadError(code, 'message', { cause, details: { name: 'x.png' } });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('UploadError');
    expect(err.code).toBe(code);
    expect(err.message).toBe('message');
    expect(err.details).toEqual({ name: 'x.png' });
    expect(err.cause).toBe(cause);
    expect(isUploadError(err, code)).toBe(true);
  });

  it('leaves cause and details unset when not given', () => {
    const err = new UploadError('UPLOAD_FAILED', 'm');
    expect('cause' in err).toBe(false);
    expect(err.details).toBeUndefined();
  });

  it('isUploadError matches on the code, not the class', () => {
    const foreign = Object.assign(new Error('x'), { code: 'UPLOAD_TOO_LARGE' });
    expect(isUploadError(foreign)).toBe(true);
    expect(isUploadError(foreign, 'UPLOAD_TOO_LARGE')).toBe(true);
    expect(isUploadError(foreign, 'UPLOAD_FAILED')).toBe(false);
    expect(isUploadError(Object.assign(new Error('x'), { code: 'CORE_NETWORK' }))).toBe(false);
    expect(isUploadError(null)).toBe(false);
    expect(isUploadError('UPLOAD_TOO_LARGE')).toBe(false);
  });
});
