import { z } from 'zod';
import { jsonBytes } from '../page.js';
import { fitFromEnd, itemBudget, plural } from '../read/shared.js';
import { defineTool } from '../tool.js';
import { type AttentionContext, ChannelArgSchema, channelText, onChannel } from './shared.js';

const inputSchema = z.object({
  channel: ChannelArgSchema,
  limit: z.number().int().min(1).max(100).default(30).describe('Most messages shown, 1-100 (default 30)'),
  clear: z.boolean().default(false).describe('Reset the tally after reading'),
});

const outputSchema = z.object({
  count: z.number().int().describe('Ambient messages dropped while the channel was closed'),
  shown: z.number().int(),
  cleared: z.boolean(),
});

/** `channel_missed`: the ambient traffic a closed channel dropped, read back as a `<missed>` block. */
export const channelMissedTool = defineTool({
  name: 'channel_missed',
  title: 'What a closed channel missed',
  description:
    'Show the ambient messages a closed channel dropped (mentions and DMs reach you anyway), as message lines read back from history. clear resets the tally.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, input, { signal }) {
    signal.throwIfAborted();
    const report = await onChannel(input.channel, (id) =>
      context.engine.missed(id, { clear: input.clear, limit: input.limit }),
    );
    const label = channelText(report.channelId);
    const cleared = report.cleared ? ' The tally is cleared.' : '';
    if (report.count === 0 || report.text === '') {
      return {
        text: `Nothing missed on ${label}.${cleared}`,
        data: { count: report.count, shown: 0, cleared: report.cleared },
      };
    }
    const budget = itemBudget(context.services);
    let block = report.text;
    let shown = report.items.length;
    if (jsonBytes(block) > budget && report.items.length > 0) {
      // Cut to the page: the newest messages stay, inside the block's own wrapper.
      const lines = report.text.split('\n');
      const open = lines[0] as string;
      const close = lines[lines.length - 1] as string;
      const fit = fitFromEnd(
        report.items.map((i) => i.text),
        budget - jsonBytes(open) - jsonBytes(close) - 120,
      );
      const kept = report.items.slice(report.items.length - fit.shown);
      const dropped = report.items.length - kept.length;
      const first = report.items[0];
      const note =
        dropped > 0 && first !== undefined && kept[0] !== undefined
          ? [
              `… ${plural(dropped, 'more message')} not shown here (ids ${first.messageId}-${kept[0].messageId - 1}): fetch_history returns them`,
            ]
          : [];
      block = [open, ...note, fit.text, close].join('\n');
      shown = kept.length;
    }
    return {
      text: `${plural(report.count, 'ambient message')} missed on ${label} while it was closed; ${shown} shown, oldest first.${cleared}\n${block}`,
      data: { count: report.count, shown, cleared: report.cleared },
    };
  },
});
