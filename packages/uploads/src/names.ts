import { UploadError } from './errors.js';

/** Longest file name accepted, in UTF-16 code units (Zulip stores names up to 255 characters). */
export const MAX_FILE_NAME_LENGTH = 255;

/**
 * Checks a file name sent with inline data or derived from a path: not empty, at most 255
 * characters, no `/` or `\`, no control characters, not `.` or `..`.
 *
 * @throws {UploadError} `UPLOAD_INVALID_NAME` saying what is wrong with it.
 */
export function checkFileName(name: string): string {
  let problem: string | undefined;
  if (name.trim() === '') problem = 'it is empty';
  else if (name.length > MAX_FILE_NAME_LENGTH)
    problem = `it is longer than ${MAX_FILE_NAME_LENGTH} characters`;
  else if (/[/\\]/.test(name)) problem = 'it contains a path separator';
  else if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(name)) problem = 'it contains a control character';
  else if (name === '.' || name === '..') problem = 'it is a relative path';
  if (problem !== undefined) {
    throw new UploadError(
      'UPLOAD_INVALID_NAME',
      `file name ${JSON.stringify(name.slice(0, 80))} is not usable: ${problem}`,
      { details: { name: name.slice(0, 80) } },
    );
  }
  return name;
}
