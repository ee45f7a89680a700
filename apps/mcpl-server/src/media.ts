import type { ZulipClient } from '@zmcp/core';
import type { DeliveryItem } from '@zmcp/delivery';
import type { ContentBlock } from '@zmcp/mcpl';
import { fetchAttachment } from '@zmcp/uploads';
import type { Logger } from './logging.js';

/** Most images inlined for one message. */
const MAX_IMAGES = 3;
const UPLOAD_PATH = /\/user_uploads\/[A-Za-z0-9_.~%/-]+/g;

/** What inlining needs: the client (its downloads stay on the realm) and a per-file cap. */
export interface ImageInliner {
  readonly client: ZulipClient;
  readonly maxBytes: number;
  readonly logger: Logger;
}

/**
 * The images of a live message as image blocks, downsampled for a model by uploads'
 * `fetchAttachment` (which only reads the realm's own uploads). Only messages tagged
 * `chat:has-image` are looked at; a file that is not an image, too large or unreadable is left
 * as the link the line already shows.
 */
export async function inlineImages(
  inliner: ImageInliner,
  item: DeliveryItem,
  signal: AbortSignal,
): Promise<ContentBlock[]> {
  if (item.kind !== 'message' || !item.tags.includes('chat:has-image')) return [];
  const paths = [...new Set(item.text.match(UPLOAD_PATH) ?? [])].slice(0, MAX_IMAGES);
  const blocks: ContentBlock[] = [];
  for (const path of paths) {
    if (signal.aborted) break;
    try {
      const file = await fetchAttachment(inliner.client, inliner.client.site, path, {
        maxBytes: inliner.maxBytes,
        signal,
      });
      if (file.kind === 'image') blocks.push({ type: 'image', data: file.data, mimeType: file.mimeType });
    } catch (err) {
      inliner.logger.debug('an image was not inlined', { messageId: item.messageId, err });
    }
  }
  return blocks;
}
