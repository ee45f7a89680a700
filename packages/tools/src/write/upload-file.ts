import { escapeMsgName } from '@zmcp/core';
import { AttachmentSchema } from '@zmcp/uploads';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, toUploadedOutput, UploadedOutputSchema, uploadAll } from './common.js';

const inputSchema = z.object({
  attachment: AttachmentSchema.describe(
    'The file: { file: "<root>/<path>" } for a file under an upload root, or { data: "<base64>", name: "chart.png" } for inline bytes; optional mime_type (guessed from the name otherwise; Zulip previews images only when it is image/*)',
  ),
});

const outputSchema = UploadedOutputSchema;

/** `upload_file`: uploads one file and returns its link, for use in a message body. */
export const uploadFileTool = defineTool({
  name: 'upload_file',
  title: 'Upload a file',
  description:
    'Upload one file to the realm without sending a message, and get its /user_uploads/... path, absolute URL and Markdown link, ' +
    'to embed in an edit_message or anywhere in a message body. To attach files to a new message, pass them as attachments of send_message or send_dm instead. ' +
    'A file nobody links is removed by Zulip after a while. Each call uploads again (a new path).',
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
        `Uploaded ${escapeMsgName(out.name)} (${out.size} bytes, ${out.content_type}) to ${out.path}.`,
        `Markdown link: ${out.markdown}`,
        `URL: ${out.url}`,
      ].join('\n'),
      data: out,
    };
  },
});
