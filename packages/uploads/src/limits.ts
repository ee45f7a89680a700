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
 * Parses `ZULIP_UPLOAD_MAX_BYTES`: a positive whole number of bytes, optionally with a binary
 * unit (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`); an unset or blank value gives `undefined`.
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` when the value is not such a number.
 */
export function parseUploadMaxBytes(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(value);
  const unit = match ? UNITS[match[2]!.toLowerCase()] : undefined;
  const bytes = match && unit !== undefined ? Number(match[1]) * unit : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new UploadError(
      'UPLOAD_CONFIG_INVALID',
      `ZULIP_UPLOAD_MAX_BYTES must be a positive number of bytes such as 26214400 or 25MiB, got ${JSON.stringify(value.slice(0, 40))}`,
      { details: { variable: 'ZULIP_UPLOAD_MAX_BYTES' } },
    );
  }
  return bytes;
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

/** Checks that a per-file cap handed to the library is usable. */
export function checkMaxBytes(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new UploadError('UPLOAD_CONFIG_INVALID', `${what} must be a non-negative whole number of bytes`, {
      details: { [what]: value },
    });
  }
}
