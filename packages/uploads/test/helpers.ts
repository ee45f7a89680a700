import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  DownloadUploadOptions,
  DownloadUploadResult,
  UploadFileInput,
  UploadFileResult,
  UploadTransport,
} from '../src/index.js';

/** One upload as the fake transport received it. */
export interface RecordedUpload {
  filename: string;
  contentType: string;
  size: number;
  bytes: Buffer;
}

/** A transport that reads every body fully and records what it got; hooks can intervene. */
export class FakeTransport implements UploadTransport {
  readonly uploads: RecordedUpload[] = [];
  readonly downloads: string[] = [];
  /** Runs when an upload starts, before its body is read. */
  beforeRead: ((input: UploadFileInput, index: number) => Promise<void> | void) | undefined;
  /** Makes the n-th upload (0-based) fail after reading its body. */
  failAt: number | undefined;
  files = new Map<string, DownloadUploadResult>();
  #next = 0;

  async uploadFile(input: UploadFileInput): Promise<UploadFileResult> {
    const index = this.#next++;
    await this.beforeRead?.(input, index);
    const chunks: Buffer[] = [];
    for await (const chunk of input.body) chunks.push(Buffer.from(chunk));
    if (index === this.failAt) {
      throw Object.assign(new Error('Zulip answered 500'), { code: 'CORE_SERVER_ERROR' });
    }
    const bytes = Buffer.concat(chunks);
    this.uploads.push({ filename: input.filename, contentType: input.contentType, size: input.size, bytes });
    const url = `/user_uploads/2/ab/k${index}/${encodeURIComponent(input.filename)}`;
    this.files.set(url, { bytes, contentType: input.contentType });
    return { url, filename: input.filename };
  }

  async downloadUpload(path: string, options: DownloadUploadOptions): Promise<DownloadUploadResult> {
    this.downloads.push(path);
    const file = this.files.get(path);
    if (file === undefined) throw Object.assign(new Error('Not found'), { code: 'CORE_NOT_FOUND' });
    if (file.bytes.length > options.maxBytes) {
      throw Object.assign(new Error('too large'), { code: 'CORE_BAD_RESPONSE' });
    }
    return file;
  }
}

/** A temporary directory removed by the returned cleanup. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-uploads-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export const SITE = 'https://acme.example';
