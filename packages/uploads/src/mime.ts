import { UploadError } from './errors.js';

const BY_EXTENSION: Readonly<Record<string, string>> = {
  // Images: Zulip previews an upload only when its declared type is image/*.
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  jpe: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  heic: 'image/heic',
  heif: 'image/heif',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  ico: 'image/vnd.microsoft.icon',
  svg: 'image/svg+xml',
  // Text and data.
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  xml: 'application/xml',
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  ics: 'text/calendar',
  js: 'text/javascript',
  mjs: 'text/javascript',
  cjs: 'text/javascript',
  ts: 'text/plain',
  py: 'text/x-python',
  sh: 'application/x-sh',
  diff: 'text/x-diff',
  patch: 'text/x-diff',
  // Documents and archives.
  pdf: 'application/pdf',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  rtf: 'application/rtf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  bz2: 'application/x-bzip2',
  xz: 'application/x-xz',
  zst: 'application/zstd',
  '7z': 'application/x-7z-compressed',
  wasm: 'application/wasm',
  // Audio and video.
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/opus',
  flac: 'audio/flac',
  weba: 'audio/webm',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
  ogv: 'video/ogg',
  mkv: 'video/x-matroska',
  avi: 'video/x-msvideo',
};

/** The type used when nothing better is known. */
export const DEFAULT_MIME_TYPE = 'application/octet-stream';

/**
 * Guesses a MIME type from a file name's extension (case-insensitive), falling back to
 * `application/octet-stream`.
 */
export function guessMimeType(filename: string): string {
  const dot = filename.lastIndexOf('.');
  if (dot <= 0 || dot === filename.length - 1) return DEFAULT_MIME_TYPE;
  return BY_EXTENSION[filename.slice(dot + 1).toLowerCase()] ?? DEFAULT_MIME_TYPE;
}

const TOKEN = '[A-Za-z0-9!#$&^_.+-]{1,127}';
const MIME_PATTERN = new RegExp(
  `^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\x00-\\x1f\\x7f]*"))*$`,
);

/** Regular expression a `mime_type` must match: `type/subtype` with optional `; key=value` parameters. */
export const MIME_TYPE_PATTERN: RegExp = MIME_PATTERN;

/**
 * Returns the declared MIME type, checked, or the one guessed from `filename` when none was given.
 *
 * @throws {UploadError} `UPLOAD_INVALID_MIME_TYPE` when the declared type is malformed.
 */
export function resolveMimeType(declared: string | undefined, filename: string): string {
  if (declared === undefined) return guessMimeType(filename);
  if (!MIME_PATTERN.test(declared)) {
    throw new UploadError(
      'UPLOAD_INVALID_MIME_TYPE',
      `mime_type must look like "image/png", got ${JSON.stringify(declared.slice(0, 80))}`,
      { details: { mimeType: declared.slice(0, 80) } },
    );
  }
  return declared;
}
