import { errorCode } from '@zmcp/core';
import { type Base64Measure, decodeBase64, measureBase64 } from './base64.js';
import { abortedError, isUploadError, UploadError } from './errors.js';
import { checkMaxBytes, MAX_FILES_PER_MESSAGE, TOTAL_BYTES_FACTOR } from './limits.js';
import { resolveMimeType } from './mime.js';
import { checkFileName } from './names.js';
import type { ByteBudget, ChunkOptions, ConfinedFile, UploadRoots } from './roots.js';
import type { Attachment } from './schema.js';
import { siteUrl } from './site.js';
import type { UploadTransport } from './transport.js';

/** One attachment uploaded to the realm. */
export interface UploadedAttachment {
  /** The name the file was uploaded under (the base name for local files). */
  name: string;
  /** Server-relative path, `/user_uploads/...`. */
  path: string;
  /** Absolute URL on the realm. */
  url: string;
  /** Markdown link to put in a message: `[name](/user_uploads/...)`. */
  markdown: string;
  /** MIME type declared for the upload. */
  contentType: string;
  /** Bytes uploaded. */
  size: number;
}

/** Options of {@link uploadAttachments}. */
export interface UploadAttachmentsOptions {
  /** The realm's URL, e.g. `https://acme.zulipchat.com`; used for absolute URLs. */
  site: string | URL;
  /** Per-file cap in bytes (the realm's `max_file_upload_size_mib`, or `ZULIP_UPLOAD_MAX_BYTES`). */
  maxFileBytes: number;
  signal?: AbortSignal | undefined;
}

const INLINE_CHUNK_BYTES = 256 * 1024;

interface Prepared {
  name: string;
  contentType: string;
  size: number;
  chunks(options: ChunkOptions): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

function tooLarge(name: string, size: number, limit: number): UploadError {
  return new UploadError(
    'UPLOAD_TOO_LARGE',
    `${name} is ${size} bytes, over the per-file limit of ${limit} bytes`,
    { details: { name, size, limit } },
  );
}

function prepareInline(data: string, name: string, mimeType: string | undefined): Prepared {
  checkFileName(name);
  const contentType = resolveMimeType(mimeType, name);
  // Measured, not decoded: a huge string costs one scan here, never a decoded copy.
  const measure: Base64Measure = measureBase64(data);
  return {
    name,
    contentType,
    size: measure.decodedBytes,
    chunks: (options) => inlineChunks(data, measure, name, options),
    close: async () => {},
  };
}

async function* inlineChunks(
  data: string,
  measure: Base64Measure,
  name: string,
  { maxBytes, budget, signal }: ChunkOptions,
): AsyncGenerator<Uint8Array> {
  if (measure.decodedBytes > maxBytes) throw tooLarge(name, measure.decodedBytes, maxBytes);
  const bytes = decodeBase64(data, measure);
  for (let offset = 0; offset < bytes.length; offset += INLINE_CHUNK_BYTES) {
    if (signal?.aborted) throw abortedError(signal);
    const chunk = bytes.subarray(offset, offset + INLINE_CHUNK_BYTES);
    budget?.take(chunk.length, name);
    yield chunk;
  }
}

function prepareFile(file: ConfinedFile, mimeType: string | undefined): Prepared {
  return {
    name: file.name,
    contentType: resolveMimeType(mimeType, file.name),
    size: file.size,
    chunks: (options) => file.chunks(options),
    close: () => file.close(),
  };
}

function labelOf(attachment: Attachment): string {
  const label = 'file' in attachment ? attachment.file : attachment.name;
  return typeof label === 'string' ? label.slice(0, 120) : '?';
}

async function prepare(roots: UploadRoots | undefined, attachment: Attachment): Promise<Prepared> {
  const candidate = attachment as Partial<Record<'file' | 'data' | 'name' | 'mime_type', unknown>>;
  const mimeType = candidate.mime_type;
  if (mimeType !== undefined && typeof mimeType !== 'string') {
    throw new UploadError('UPLOAD_INVALID_MIME_TYPE', 'mime_type must be a string such as "image/png"');
  }
  if (typeof candidate.file === 'string' && candidate.data === undefined) {
    if (roots === undefined) {
      throw new UploadError(
        'UPLOAD_NO_ROOTS',
        'local files cannot be attached: no upload roots are configured (ZULIP_UPLOAD_ROOTS); send the bytes inline as { data: <base64>, name }',
        { details: { ref: candidate.file, roots: [] } },
      );
    }
    const file = await roots.openFile(candidate.file);
    try {
      return prepareFile(file, mimeType);
    } catch (err) {
      await file.close();
      throw err;
    }
  }
  if (typeof candidate.data === 'string' && candidate.file === undefined) {
    if (typeof candidate.name !== 'string') {
      throw new UploadError('UPLOAD_INVALID_ATTACHMENT', 'inline data needs a name, e.g. "chart.png"');
    }
    return prepareInline(candidate.data, candidate.name, mimeType);
  }
  throw new UploadError(
    'UPLOAD_INVALID_ATTACHMENT',
    'an attachment is either { file: "<root>/<path>" } or { data: <base64>, name }',
  );
}

/** Where an upload landed, as a server-relative path, or `undefined` if it is not a realm upload. */
function uploadPath(url: string, site: URL): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url, site);
  } catch {
    return undefined;
  }
  if (parsed.origin !== site.origin) return undefined;
  if (!parsed.pathname.startsWith('/user_uploads/')) return undefined;
  if (parsed.search !== '' || parsed.hash !== '') return undefined;
  return parsed.pathname;
}

/** Link text the way Zulip's web client writes it: the file name without square brackets. */
function linkText(name: string): string {
  return name.replace(/[[\]]/g, '');
}

/** Markdown-safe link target: characters that would end or break a link are percent-encoded. */
function linkTarget(path: string): string {
  return path.replace(/[\s()<>]/g, (ch) => encodeURIComponent(ch).replace('(', '%28').replace(')', '%29'));
}

function summary(uploaded: readonly UploadedAttachment[]): { name: string; path: string }[] {
  return uploaded.map(({ name, path }) => ({ name, path }));
}

function earlierNote(uploaded: readonly UploadedAttachment[]): string {
  if (uploaded.length === 0) return '';
  const list = uploaded.map((u) => `${u.name} (${u.path})`).join(', ');
  return `; ${uploaded.length} earlier attachment(s) were uploaded and stay on the realm: ${list}`;
}

function atIndex(
  err: unknown,
  index: number,
  name: string,
  uploaded: readonly UploadedAttachment[],
  signal: AbortSignal | undefined,
): UploadError {
  const where = `attachments[${index}] (${name})`;
  const base = { index, name, uploaded: summary(uploaded) };
  if (isUploadError(err)) {
    return new UploadError(err.code, `${where}: ${err.message}${earlierNote(uploaded)}`, {
      cause: err,
      details: { ...base, ...err.details, index, uploaded: base.uploaded },
    });
  }
  if (signal?.aborted) {
    return new UploadError('UPLOAD_ABORTED', `${where}: the upload was aborted${earlierNote(uploaded)}`, {
      cause: err,
      details: base,
    });
  }
  const causeCode = errorCode(err);
  const reason = err instanceof Error ? err.message : String(err);
  return new UploadError(
    'UPLOAD_FAILED',
    `${where} could not be uploaded: ${reason}${earlierNote(uploaded)}`,
    {
      cause: err,
      details: causeCode !== undefined ? { ...base, causeCode } : base,
    },
  );
}

async function* observe(
  source: AsyncIterable<Uint8Array>,
  onError: (err: unknown) => void,
): AsyncGenerator<Uint8Array> {
  try {
    yield* source;
  } catch (err) {
    onError(err);
    throw err;
  }
}

/**
 * Uploads attachments to the realm one at a time, streaming each, and returns their paths, URLs
 * and markdown links in input order. Every path and size is checked before the first byte is
 * read; sizes are checked again on the bytes actually read.
 *
 * @throws {UploadError} `UPLOAD_TOO_MANY_FILES`, `UPLOAD_TOTAL_TOO_LARGE`, `UPLOAD_TOO_LARGE`,
 *   `UPLOAD_BAD_BASE64`, `UPLOAD_INVALID_NAME`, `UPLOAD_INVALID_MIME_TYPE`, any refusal of
 *   {@link UploadRoots.openFile}, `UPLOAD_FILE_CHANGED`, `UPLOAD_FAILED`, `UPLOAD_BAD_RESPONSE`,
 *   `UPLOAD_ABORTED`. Errors about one attachment carry `details.index`, `details.name` and
 *   `details.uploaded` (what earlier attachments uploaded; they stay on the realm).
 */
export async function uploadAttachments(
  transport: Pick<UploadTransport, 'uploadFile'>,
  roots: UploadRoots | undefined,
  attachments: readonly Attachment[],
  options: UploadAttachmentsOptions,
): Promise<UploadedAttachment[]> {
  const { maxFileBytes, signal } = options;
  checkMaxBytes(maxFileBytes, 'maxFileBytes');
  const site = siteUrl(options.site);
  if (attachments.length > MAX_FILES_PER_MESSAGE) {
    throw new UploadError(
      'UPLOAD_TOO_MANY_FILES',
      `${attachments.length} attachments given; at most ${MAX_FILES_PER_MESSAGE} per message`,
      { details: { count: attachments.length, limit: MAX_FILES_PER_MESSAGE } },
    );
  }
  const totalLimit = maxFileBytes * TOTAL_BYTES_FACTOR;
  const prepared: Prepared[] = [];
  const uploaded: UploadedAttachment[] = [];
  try {
    // Phase 1: every path resolved, opened and measured; nothing read, nothing sent.
    let declared = 0;
    for (const [index, attachment] of attachments.entries()) {
      if (signal?.aborted) throw abortedError(signal);
      try {
        const item = await prepare(roots, attachment);
        prepared.push(item);
        if (item.size > maxFileBytes) throw tooLarge(item.name, item.size, maxFileBytes);
        declared += item.size;
      } catch (err) {
        throw atIndex(err, index, labelOf(attachment), uploaded, signal);
      }
    }
    if (declared > totalLimit) {
      throw new UploadError(
        'UPLOAD_TOTAL_TOO_LARGE',
        `the attachments total ${declared} bytes, over the per-message limit of ${totalLimit} bytes (${TOTAL_BYTES_FACTOR}x the per-file limit)`,
        { details: { size: declared, limit: totalLimit } },
      );
    }

    // Phase 2: one file at a time, streamed, with the aggregate charged on bytes read.
    let used = 0;
    const budget: ByteBudget = {
      take(bytes, name) {
        used += bytes;
        if (used > totalLimit) {
          throw new UploadError(
            'UPLOAD_TOTAL_TOO_LARGE',
            `the attachments grew to over the per-message limit of ${totalLimit} bytes while being read`,
            { details: { name, size: used, limit: totalLimit } },
          );
        }
      },
    };
    for (const [index, item] of prepared.entries()) {
      if (signal?.aborted) throw atIndex(abortedError(signal), index, item.name, uploaded, signal);
      let bodyError: unknown;
      let sent = 0;
      const body = observe(item.chunks({ maxBytes: maxFileBytes, budget, signal }), (err) => {
        bodyError = err;
      });
      const counted = (async function* () {
        for await (const chunk of body) {
          sent += chunk.length;
          yield chunk;
        }
      })();
      let result: Awaited<ReturnType<UploadTransport['uploadFile']>>;
      try {
        result = await transport.uploadFile({
          filename: item.name,
          contentType: item.contentType,
          size: item.size,
          body: counted,
          ...(signal === undefined ? {} : { signal }),
        });
      } catch (err) {
        throw atIndex(bodyError ?? err, index, item.name, uploaded, signal);
      } finally {
        await item.close();
      }
      const path = uploadPath(typeof result?.url === 'string' ? result.url : '', site);
      if (path === undefined) {
        throw atIndex(
          new UploadError(
            'UPLOAD_BAD_RESPONSE',
            'Zulip did not answer with a /user_uploads/ path on the realm',
            {
              details: { url: String(result?.url).slice(0, 200) },
            },
          ),
          index,
          item.name,
          uploaded,
          signal,
        );
      }
      uploaded.push({
        name: item.name,
        path,
        url: new URL(path, site).href,
        markdown: `[${linkText(item.name)}](${linkTarget(path)})`,
        contentType: item.contentType,
        size: sent,
      });
    }
    return uploaded;
  } finally {
    await Promise.all(prepared.map((item) => item.close()));
  }
}

/** The markdown that links uploaded attachments in a message: one `[name](path)` per line. */
export function markdownForAttachments(uploaded: readonly Pick<UploadedAttachment, 'markdown'>[]): string {
  return uploaded.map((item) => item.markdown).join('\n');
}

/**
 * Appends attachment links to a message body the way Zulip's web client places them: each link
 * on its own line after the text; with no text, the links alone.
 */
export function appendAttachmentMarkdown(
  content: string | undefined,
  uploaded: readonly Pick<UploadedAttachment, 'markdown'>[],
): string {
  const links = markdownForAttachments(uploaded);
  const body = (content ?? '').trimEnd();
  if (links === '') return body;
  return body === '' ? links : `${body}\n${links}`;
}
