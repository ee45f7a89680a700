/** One file for {@link UploadTransport.uploadFile}: streamed, with its length known up front. */
export interface UploadFileInput {
  /** Name Zulip stores and shows for the file. */
  filename: string;
  /** MIME type declared in the multipart part; Zulip previews only `image/*`. */
  contentType: string;
  /** Exact number of bytes `body` yields, for the request's Content-Length. */
  size: number;
  /** The file's bytes; the stream throws to abort the upload. */
  body: AsyncIterable<Uint8Array>;
  signal?: AbortSignal;
}

/** What Zulip answers to `POST /user_uploads`. */
export interface UploadFileResult {
  /** Server-relative `/user_uploads/...` path (or an absolute URL on the realm). */
  url: string;
  /** The name Zulip stored (FL286), when it says. */
  filename?: string | undefined;
}

/** Options of {@link UploadTransport.downloadUpload}. */
export interface DownloadUploadOptions {
  /** Refuse and stop reading a body longer than this. */
  maxBytes: number;
  signal?: AbortSignal;
}

/** What {@link UploadTransport.downloadUpload} returns: the file's bytes and its declared type. */
export interface DownloadUploadResult {
  bytes: Uint8Array;
  contentType: string | undefined;
}

/**
 * The network boundary of `@zmcp/uploads`: the two calls it makes to Zulip. `ZulipClient` from
 * `@zmcp/core` has this shape and is passed directly; tests pass a fake.
 */
export interface UploadTransport {
  /** Uploads one file as `multipart/form-data` to `POST /user_uploads`, streaming `body`. */
  uploadFile(input: UploadFileInput): Promise<UploadFileResult>;
  /** Downloads one of the realm's own `/user_uploads/...` paths, refusing redirects off the realm. */
  downloadUpload(path: string, options: DownloadUploadOptions): Promise<DownloadUploadResult>;
}
