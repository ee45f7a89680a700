import { escapeMsgName, quoteName } from '@zmcp/core';
import { AttachmentSchema } from '@zmcp/uploads';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { ATTACHMENT_HELP, assertWritable, toUploadedOutput, UploadedOutputSchema } from './common.js';
import { uploadAll } from './post.js';

const inputSchema = z.object({
  attachment: AttachmentSchema.describe(ATTACHMENT_HELP),
});

const outputSchema = UploadedOutputSchema;

/** `upload_file`: uploads one file and returns its link, for use in a message body. */
export const uploadFileTool = defineTool({
  name: 'upload_file',
  title: 'Upload a file',
  description:
    'Upload one file without sending a message; returns its path, URL and Markdown link to put in a message. To attach files to a new message, use send_message attachments.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'files',
  async handler(services: ToolServices, input, context) {
    assertWritable(services);
    const [uploaded] = await uploadAll(services, [input.attachment], context.signal);
    if (uploaded === undefined) throw new Error('upload returned nothing');
    const out = toUploadedOutput(uploaded);
    return {
      text: [
        `Uploaded ${quoteName(uploaded.name, 'person')} (${out.size} bytes, ${out.content_type}) to ${out.path}.`,
        `Markdown link: ${escapeMsgName(uploaded.markdown)}`,
        `URL: ${out.url}`,
      ].join('\n'),
      data: out,
    };
  },
});
