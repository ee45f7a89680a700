// The public API of @zmcp/uploads. Every export below is a promise to users: adding a
// line is an API decision. Internal helpers stay unexported.

export type { UploadErrorCode, UploadErrorOptions } from './errors.js';
export { isUploadError, UploadError } from './errors.js';
export type { FetchAttachmentOptions, FetchedAttachment } from './fetch.js';
export {
  DEFAULT_IMAGE_MAX_BYTES,
  DEFAULT_IMAGE_MAX_EDGE,
  DEFAULT_IMAGE_MAX_PIXELS,
  DEFAULT_TEXT_MAX_CHARS,
  fetchAttachment,
  parseUploadPath,
} from './fetch.js';
export {
  DEFAULT_MAX_FILE_BYTES,
  MAX_FILES_PER_MESSAGE,
  maxInlineAttachmentChars,
  parseByteSize,
  parseUploadMaxBytes,
  resolveMaxFileBytes,
  TOTAL_BYTES_FACTOR,
} from './limits.js';
export { guessMimeType } from './mime.js';
export type {
  ByteBudget,
  ChunkOptions,
  ConfinedFile,
  UploadRoot,
  UploadRootSpec,
  UploadRootsOptions,
} from './roots.js';
export { parseUploadRoots, UploadRoots } from './roots.js';
export type { Attachment, DataAttachment, FileAttachment } from './schema.js';
export { AttachmentSchema, AttachmentsSchema, DataAttachmentSchema, FileAttachmentSchema } from './schema.js';
export type {
  DownloadUploadOptions,
  DownloadUploadResult,
  UploadFileInput,
  UploadFileResult,
  UploadTransport,
} from './transport.js';
export type { UploadAttachmentsOptions, UploadedAttachment } from './upload.js';
export { appendAttachmentMarkdown, markdownForAttachments, uploadAttachments } from './upload.js';
