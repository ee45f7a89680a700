import { z } from 'zod';
import { MAX_FILES_PER_MESSAGE } from './limits.js';
import { MIME_TYPE_PATTERN } from './mime.js';

const MimeTypeSchema = z
  .string()
  .regex(MIME_TYPE_PATTERN, 'mime_type must look like "image/png"')
  .describe('Guessed from the name when omitted');

/** A local file to attach: `<root>/<path>` under one of the configured upload roots. */
export const FileAttachmentSchema = z.strictObject({
  file: z.string().min(1).describe('<root>/<path> under an upload root'),
  mime_type: MimeTypeSchema.optional(),
});

/** Inline bytes to attach: base64 data and the file name to show. */
export const DataAttachmentSchema = z.strictObject({
  data: z.string().describe('Base64'),
  name: z.string().min(1).max(255).describe('File name'),
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
