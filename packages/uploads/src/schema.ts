import { z } from 'zod';
import { MAX_FILES_PER_MESSAGE } from './limits.js';
import { MIME_TYPE_PATTERN } from './mime.js';

// Guessed from the name when omitted. The shapes carry no descriptions of their own: a tool says
// how to attach in one line (`{ file: "<root>/<path>" }` or `{ data: "<base64>", name }`), since
// every description is paid for in the agent's context on every turn.
const MimeTypeSchema = z.string().regex(MIME_TYPE_PATTERN, 'mime_type must look like "image/png"');

/** A local file to attach: `<root>/<path>` under one of the configured upload roots. */
export const FileAttachmentSchema = z.strictObject({
  file: z.string().min(1),
  mime_type: MimeTypeSchema.optional(),
});

/** Inline bytes to attach: base64 data and the file name to show. */
export const DataAttachmentSchema = z.strictObject({
  data: z.string(),
  name: z.string().min(1).max(255),
  mime_type: MimeTypeSchema.optional(),
});

/** One attachment: a local file under an upload root, or inline base64 data. */
export const AttachmentSchema = z.union([FileAttachmentSchema, DataAttachmentSchema]);

/** The attachments of one message: at most {@link MAX_FILES_PER_MESSAGE}. */
export const AttachmentsSchema = z
  .array(AttachmentSchema)
  .max(MAX_FILES_PER_MESSAGE, `at most ${MAX_FILES_PER_MESSAGE} attachments per message`);

/** A local file attachment. */
export type FileAttachment = z.infer<typeof FileAttachmentSchema>;
/** An inline base64 attachment. */
export type DataAttachment = z.infer<typeof DataAttachmentSchema>;
/** One attachment, as tools receive it. */
export type Attachment = z.infer<typeof AttachmentSchema>;
