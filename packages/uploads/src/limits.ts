import { UploadError } from './errors.js';

/** At most this many files are attached to one message. */
export const MAX_FILES_PER_MESSAGE = 10;

/** The files of one message together may be this many times the per-file cap. */
export const TOTAL_BYTES_FACTOR = 4;

/** Zulip's default per-file cap (`max_file_upload_size_mib: 25`), used when the realm does not say. */
export const DEFAULT_MAX_FILE_BYTES = 25 * 1024 * 1024;

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
};

/**
 * The one grammar of a size in bytes: a positive whole number, optionally followed by a binary
 * unit (`B`, `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, any case, spaces allowed around it), such as
 * `26214400`, `512KiB` or `25MiB`. Decimal units (`MB`) and fractions are refused as ambiguous.
 * `name` (the setting being read) leads the error message.
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` when the value is not such a size; `details.variable` is `name`.
 */
export function parseByteSize(value: string, name = 'size'): number {
  const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(value);
  const unit = match ? UNITS[match[2]!.toLowerCase()] : undefined;
  const bytes = match && unit !== undefined ? Number(match[1]) * unit : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new UploadError(
      'UPLOAD_CONFIG_INVALID',
      `${name} must be a positive number of bytes such as 26214400 or 25MiB (units K/KiB, M/MiB, G/GiB), got ${JSON.stringify(value.slice(0, 40))}`,
      { details: { variable: name } },
    );
  }
  return bytes;
}

/**
 * Parses `ZULIP_UPLOAD_MAX_BYTES` with {@link parseByteSize}; an unset or blank value gives `undefined`.
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` when the value is not such a number.
 */
export function parseUploadMaxBytes(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return parseByteSize(value, 'ZULIP_UPLOAD_MAX_BYTES');
}

/**
 * The per-file cap in bytes: the `ZULIP_UPLOAD_MAX_BYTES` override when set, else the realm's
 * `max_file_upload_size_mib`, else Zulip's default of 25 MiB.
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` when the override is malformed.
 */
export function resolveMaxFileBytes(options: {
  realmMaxFileUploadSizeMib?: number | undefined;
  override?: string | undefined;
}): number {
  const override = parseUploadMaxBytes(options.override);
  if (override !== undefined) return override;
  const mib = options.realmMaxFileUploadSizeMib;
  if (mib !== undefined && Number.isFinite(mib) && mib > 0) return Math.floor(mib * 1024 * 1024);
  return DEFAULT_MAX_FILE_BYTES;
}

/**
 * The largest base64 text the inline attachments of one message can take within the limits:
 * the per-message budget ({@link TOTAL_BYTES_FACTOR} times the per-file cap), base64-encoded.
 * A transport that carries tool calls needs at least this much room (plus the rest of the
 * request) for every attachment the limits allow to arrive.
 */
export function maxInlineAttachmentChars(maxFileBytes: number): number {
  return 4 * Math.ceil((TOTAL_BYTES_FACTOR * maxFileBytes) / 3);
}

/** Checks that a per-file cap handed to the library is usable. */
export function checkMaxBytes(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new UploadError('UPLOAD_CONFIG_INVALID', `${what} must be a non-negative whole number of bytes`, {
      details: { [what]: value },
    });
  }
}
