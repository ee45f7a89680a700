import { CodedError, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

/**
 * Every failure `@zmcp/uploads` reports, as a stable string code. Callers switch on
 * `err.code`, never on `instanceof` or the message.
 */
export type UploadErrorCode =
  /** `ZULIP_UPLOAD_ROOTS` or `ZULIP_UPLOAD_MAX_BYTES` is malformed. `details.variable` names it. */
  | 'UPLOAD_CONFIG_INVALID'
  /** A configured upload root does not exist or is not a directory (start-up), or vanished since. */
  | 'UPLOAD_ROOT_MISSING'
  /** A root now resolves to a different directory than at start-up (it was moved or re-pointed). */
  | 'UPLOAD_ROOT_CHANGED'
  /** A local file was asked for but no upload roots are configured. */
  | 'UPLOAD_NO_ROOTS'
  /** This platform cannot check the opened descriptor (not Linux, or no `/proc/self/fd`). */
  | 'UPLOAD_LOCAL_FILES_UNSUPPORTED'
  /** A local file path is absolute; it must be `<root>/<path>`. */
  | 'UPLOAD_ABSOLUTE_PATH'
  /** The first segment of a local file path names no configured root. `details.roots` lists them. */
  | 'UPLOAD_UNKNOWN_ROOT'
  /** A local file path is empty, names only a root, or contains a NUL byte. */
  | 'UPLOAD_INVALID_PATH'
  /** A local file path leaves its root, by `..` or through a symlink, before or after opening. */
  | 'UPLOAD_PATH_ESCAPE'
  /** The local file does not exist. */
  | 'UPLOAD_FILE_NOT_FOUND'
  /** The local file exists but could not be opened or read. */
  | 'UPLOAD_FILE_UNREADABLE'
  /** The path is a directory, FIFO, socket or device, not a regular file. */
  | 'UPLOAD_NOT_REGULAR_FILE'
  /** The local file changed size between `fstat` and the end of reading. */
  | 'UPLOAD_FILE_CHANGED'
  /** Inline data is not valid base64. */
  | 'UPLOAD_BAD_BASE64'
  /** An attachment is neither `{ file }` nor `{ data, name }`. */
  | 'UPLOAD_INVALID_ATTACHMENT'
  /** A file name is empty, too long, or contains a path separator or control character. */
  | 'UPLOAD_INVALID_NAME'
  /** A MIME type is not of the form `type/subtype`. */
  | 'UPLOAD_INVALID_MIME_TYPE'
  /** One file is larger than the per-file cap. `details`: `name`, `size`, `limit`. */
  | 'UPLOAD_TOO_LARGE'
  /** More than 10 files in one message. `details`: `count`, `limit`. */
  | 'UPLOAD_TOO_MANY_FILES'
  /** The files together exceed 4x the per-file cap. `details`: `size`, `limit`. */
  | 'UPLOAD_TOTAL_TOO_LARGE'
  /** The transport failed to upload a file; `cause` is its error, `details.uploaded` what went before. */
  | 'UPLOAD_FAILED'
  /** The transport answered with something that is not a realm upload path. */
  | 'UPLOAD_BAD_RESPONSE'
  /** A download path is not one of the realm's own `/user_uploads/` paths. */
  | 'UPLOAD_BAD_DOWNLOAD_PATH'
  /** The transport failed to download an upload; `cause` is its error. */
  | 'UPLOAD_DOWNLOAD_FAILED'
  /** The caller's AbortSignal fired. */
  | 'UPLOAD_ABORTED';

/** Options accepted by {@link UploadError}. */
export type UploadErrorOptions = ZmcpErrorOptions;

/**
 * The one error class of `@zmcp/uploads`: a stable `code`, optional `details`, and the `cause`.
 * `instanceof` holds for an error from any copy of the package (a brand).
 */
export class UploadError extends CodedError<UploadErrorCode> {
  static override readonly brand: string = '@zmcp/uploads.UploadError';
  override readonly name: string = 'UploadError';
}

/** True when `err` is an `UploadError` (from any copy of this package) with one of `codes`. */
export function isUploadError(err: unknown, ...codes: UploadErrorCode[]): err is UploadError {
  return isCodedError(UploadError, err, codes);
}

/** The error for a fired AbortSignal, carrying its reason as `cause`. */
export function abortedError(signal: AbortSignal, details: Record<string, unknown> = {}): UploadError {
  return new UploadError('UPLOAD_ABORTED', 'the upload was aborted', { cause: signal.reason, details });
}
