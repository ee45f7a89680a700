import { errorCode } from '@zmcp/core';
import { isUploadError, UploadError } from './errors.js';
import { sniffImage, toModelImage } from './image.js';
import { checkMaxBytes } from './limits.js';
import { DEFAULT_MIME_TYPE, guessMimeType } from './mime.js';
import { siteUrl } from './site.js';
import type { UploadTransport } from './transport.js';

/** Default longest side of an image handed to a model, in pixels. */
export const DEFAULT_IMAGE_MAX_EDGE = 1568;
/** Default encoded-size budget of an image handed to a model, in bytes. */
export const DEFAULT_IMAGE_MAX_BYTES = 1024 * 1024;
/** Default cap on decoded pixels; larger images are returned as binary, never decoded. */
export const DEFAULT_IMAGE_MAX_PIXELS = 40_000_000;
/** Default cap on returned text, in UTF-16 code units. */
export const DEFAULT_TEXT_MAX_CHARS = 100_000;

/** Options of {@link fetchAttachment}. */
export interface FetchAttachmentOptions {
  /** Refuse a file larger than this many bytes. */
  maxBytes: number;
  /** Longest side of a returned image; larger ones are downsampled. Default 1568. */
  imageMaxEdge?: number | undefined;
  /** Byte budget of a returned image; larger ones are re-encoded. Default 1 MiB. */
  imageMaxBytes?: number | undefined;
  /** Images with more pixels are not decoded and come back as binary. Default 40 million. */
  imageMaxPixels?: number | undefined;
  /** Text longer than this is cut and marked `truncated`. Default 100 000. */
  textMaxChars?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** A fetched attachment, shaped for a model: an image block, text, or base64 bytes. */
export type FetchedAttachment =
  | {
      kind: 'image';
      name: string;
      mimeType: string;
      /** Base64 of the (possibly downsampled and re-encoded) image. */
      data: string;
      width: number;
      height: number;
      /** Size of the file on the realm. */
      originalBytes: number;
    }
  | {
      kind: 'text';
      name: string;
      mimeType: string;
      text: string;
      /** Size of the file on the realm. */
      size: number;
      truncated: boolean;
    }
  | {
      kind: 'binary';
      name: string;
      mimeType: string;
      /** Base64 of the file's bytes. */
      data: string;
      size: number;
    };

const PREFIX = '/user_uploads/';

function badPath(input: string, reason: string): UploadError {
  return new UploadError(
    'UPLOAD_BAD_DOWNLOAD_PATH',
    `${JSON.stringify(input.slice(0, 200))} is not an upload on this realm: ${reason}; expected /user_uploads/... or a URL on the realm`,
    { details: { path: input.slice(0, 200) } },
  );
}

/**
 * Checks that `pathOrUrl` names one of the realm's own uploads, a server-relative
 * `/user_uploads/...` path or an absolute URL on the realm's origin, and returns its
 * server-relative path. Dot segments (plain or percent-encoded), backslashes, control
 * characters, queries, credentials and other hosts are refused.
 *
 * @throws {UploadError} `UPLOAD_BAD_DOWNLOAD_PATH` saying why.
 */
export function parseUploadPath(pathOrUrl: string, site: string | URL): string {
  const realm = siteUrl(site);
  const input = pathOrUrl;
  if (/[\u0000-\u0020\u007f\\]/.test(input))
    throw badPath(input, 'it contains whitespace, a backslash or a control character');
  let raw: string;
  if (input.startsWith('/') && !input.startsWith('//')) {
    raw = input;
  } else {
    const match = /^https?:\/\/[^/?#]*(\/[^?#]*)?/i.exec(input);
    if (!match) throw badPath(input, 'it is neither a /user_uploads/ path nor an http(s) URL');
    raw = input.slice(match[0].length - (match[1]?.length ?? 0));
  }
  if (/[?#]/.test(raw)) throw badPath(input, 'it has a query or fragment');
  let url: URL;
  try {
    url = new URL(input, realm);
  } catch {
    throw badPath(input, 'it is not a valid URL');
  }
  if (url.origin !== realm.origin) throw badPath(input, 'it is on another host');
  if (url.username !== '' || url.password !== '') throw badPath(input, 'it carries credentials');
  if (!raw.startsWith(PREFIX)) throw badPath(input, 'it is not under /user_uploads/');
  const segments = raw.slice(PREFIX.length).split('/');
  if (segments.length < 2) throw badPath(input, 'it names no file');
  for (const segment of segments) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw badPath(input, 'it has a malformed %-escape');
    }
    if (decoded === '' || decoded === '.' || decoded === '..')
      throw badPath(input, 'it has an empty or dot segment');
    if (/[/\\\u0000-\u001f\u007f]/.test(decoded))
      throw badPath(input, 'it has an encoded separator or control character');
  }
  if (!url.pathname.startsWith(PREFIX)) throw badPath(input, 'it leaves /user_uploads/');
  return url.pathname;
}

function baseType(contentType: string | undefined): string | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === undefined || type === '' ? undefined : type;
}

function isTextType(type: string): boolean {
  return (
    type.startsWith('text/') ||
    /^application\/(json|xml|yaml|x-yaml|toml|javascript|ecmascript|x-ndjson|x-sh|sql|graphql|csv)$/.test(
      type,
    ) ||
    /^application\/[\w.-]+\+(json|xml|yaml)$/.test(type) ||
    type === 'image/svg+xml'
  );
}

/** Bytes that decode as UTF-8 and hold no NULs or stray control characters read as text. */
function looksLikeText(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 64 * 1024);
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return false;
    if (byte < 32 && byte !== 9 && byte !== 10 && byte !== 13 && byte !== 12) control++;
  }
  if (control > sample.length / 100) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function capText(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // don't split a surrogate pair
  return { text: text.slice(0, end), truncated: true };
}

function nameOf(path: string): string {
  const last = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function positive(value: number | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new UploadError('UPLOAD_CONFIG_INVALID', `${what} must be a positive whole number`, {
      details: { [what]: value },
    });
  }
  return value;
}

/**
 * Downloads one of the realm's own uploads and shapes it for a model: images (recognised by
 * their bytes) as an image downsampled to `imageMaxEdge` and re-encoded to fit
 * `imageMaxBytes`, text as UTF-8 (invalid bytes replaced, capped at `textMaxChars`), anything
 * else as base64.
 *
 * @throws {UploadError} `UPLOAD_BAD_DOWNLOAD_PATH` before any request, `UPLOAD_TOO_LARGE` over
 *   `maxBytes`, `UPLOAD_DOWNLOAD_FAILED` (cause: the transport's error), `UPLOAD_ABORTED`.
 */
export async function fetchAttachment(
  transport: Pick<UploadTransport, 'downloadUpload'>,
  site: string | URL,
  pathOrUrl: string,
  options: FetchAttachmentOptions,
): Promise<FetchedAttachment> {
  const { maxBytes, signal } = options;
  checkMaxBytes(maxBytes, 'maxBytes');
  const imageMaxEdge = positive(options.imageMaxEdge, DEFAULT_IMAGE_MAX_EDGE, 'imageMaxEdge');
  const imageMaxBytes = positive(options.imageMaxBytes, DEFAULT_IMAGE_MAX_BYTES, 'imageMaxBytes');
  const imageMaxPixels = positive(options.imageMaxPixels, DEFAULT_IMAGE_MAX_PIXELS, 'imageMaxPixels');
  const textMaxChars = positive(options.textMaxChars, DEFAULT_TEXT_MAX_CHARS, 'textMaxChars');
  const path = parseUploadPath(pathOrUrl, site);
  const name = nameOf(path);

  let downloaded: Awaited<ReturnType<UploadTransport['downloadUpload']>>;
  try {
    if (signal?.aborted) throw signal.reason;
    downloaded = await transport.downloadUpload(
      path,
      signal === undefined ? { maxBytes } : { maxBytes, signal },
    );
  } catch (err) {
    if (isUploadError(err)) throw err;
    if (signal?.aborted) {
      throw new UploadError('UPLOAD_ABORTED', 'the download was aborted', { cause: err, details: { path } });
    }
    const causeCode = errorCode(err);
    const causeDetails = (err as { details?: { declared?: unknown } } | null)?.details;
    if (causeCode === 'CORE_TOO_LARGE') {
      // The transport stopped reading at the cap.
      const size = typeof causeDetails?.declared === 'number' ? causeDetails.declared : undefined;
      throw new UploadError('UPLOAD_TOO_LARGE', `${name} is over the download limit of ${maxBytes} bytes`, {
        cause: err,
        details: size === undefined ? { name, limit: maxBytes } : { name, size, limit: maxBytes },
      });
    }
    const reason = err instanceof Error ? err.message : String(err);
    throw new UploadError('UPLOAD_DOWNLOAD_FAILED', `could not download ${path}: ${reason}`, {
      cause: err,
      details: typeof causeCode === 'string' ? { path, causeCode } : { path },
    });
  }
  const { bytes } = downloaded;
  if (bytes.length > maxBytes) {
    throw new UploadError(
      'UPLOAD_TOO_LARGE',
      `${name} is ${bytes.length} bytes, over the download limit of ${maxBytes} bytes`,
      { details: { name, size: bytes.length, limit: maxBytes } },
    );
  }
  const declared = baseType(downloaded.contentType);

  const image = await sniffImage(bytes, imageMaxPixels);
  if (image !== undefined) {
    const fitted = await toModelImage(bytes, image, {
      maxEdge: imageMaxEdge,
      maxBytes: imageMaxBytes,
      maxPixels: imageMaxPixels,
    });
    return {
      kind: 'image',
      name,
      mimeType: fitted.mimeType,
      data: fitted.bytes.toString('base64'),
      width: fitted.width,
      height: fitted.height,
      originalBytes: bytes.length,
    };
  }

  const guessed = guessMimeType(name);
  const mimeType = declared !== undefined && declared !== DEFAULT_MIME_TYPE ? declared : guessed;
  const textual =
    declared !== undefined && declared !== DEFAULT_MIME_TYPE ? isTextType(declared) : looksLikeText(bytes);
  if (textual) {
    const decoded = new TextDecoder('utf-8').decode(bytes);
    const { text, truncated } = capText(decoded, textMaxChars);
    const textType = mimeType === DEFAULT_MIME_TYPE ? 'text/plain' : mimeType;
    return { kind: 'text', name, mimeType: textType, text, size: bytes.length, truncated };
  }
  return {
    kind: 'binary',
    name,
    mimeType,
    data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64'),
    size: bytes.length,
  };
}
