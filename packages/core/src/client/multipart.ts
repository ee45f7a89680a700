import { randomBytes } from 'node:crypto';
import { ZmcpError } from '../errors.js';

/** A file body: bytes arriving in chunks, never held whole. */
export type UploadBody = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

/** A streaming multipart/form-data body of one file part, with its exact length. */
export interface MultipartBody {
  contentType: string;
  contentLength: number;
  chunks: AsyncIterable<Uint8Array>;
}

function quoteFilename(name: string): string {
  // What browsers do (WHATWG multipart encoding): the quoted string cannot be broken out of.
  return name.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

function safeContentType(type: string): string {
  const trimmed = type.trim();
  return /^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=("[^"\r\n]*"|[\w.+-]+))*$/.test(trimmed)
    ? trimmed
    : 'application/octet-stream';
}

async function* fromReadableStream(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Wraps one file into a multipart/form-data body that streams the file's chunks between a
 * small head and tail, so its length is known up front and the file is never buffered. The
 * body fails if the file yields more or fewer bytes than `size` declares.
 */
export function multipartFileBody(file: {
  field: string;
  filename: string;
  contentType: string;
  size: number;
  body: UploadBody;
}): MultipartBody {
  const boundary = `----zmcp${randomBytes(16).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${quoteFilename(file.field)}"; filename="${quoteFilename(
      file.filename,
    )}"\r\nContent-Type: ${safeContentType(file.contentType)}\r\n\r\n`,
    'utf8',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  const source: AsyncIterable<Uint8Array> =
    file.body instanceof ReadableStream ? fromReadableStream(file.body) : file.body;
  const declared = file.size;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield head;
    let sent = 0;
    for await (const chunk of source) {
      sent += chunk.byteLength;
      if (sent > declared) {
        throw new ZmcpError(
          'CORE_INVALID_ARGUMENT',
          `The upload body is longer than its declared size of ${declared} bytes`,
          { details: { declared } },
        );
      }
      if (chunk.byteLength > 0) yield chunk;
    }
    if (sent !== declared) {
      throw new ZmcpError(
        'CORE_INVALID_ARGUMENT',
        `The upload body ended after ${sent} bytes; its declared size is ${declared}`,
        { details: { declared, sent } },
      );
    }
    yield tail;
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    contentLength: head.byteLength + declared + tail.byteLength,
    chunks: chunks(),
  };
}
