import { z } from 'zod';
import { fitToBudget } from '../page.js';
import { ID_BYTES, itemBudget, plural } from '../read/shared.js';
import { defineTool } from '../tool.js';
import { type AttentionContext, channelText } from './shared.js';

const outputSchema = z.object({
  channels: z.number().int(),
  open: z.number().int(),
  added: z.number().int(),
  removed: z.number().int(),
  pending: z.number().int().describe('Announced to the host, not confirmed yet'),
  refused: z.number().int().describe('Refused by the host this time'),
});

/** `refresh_channels`: enumerates the visible streams and DMs again and announces what changed. */
export const refreshChannelsTool = defineTool({
  name: 'refresh_channels',
  title: 'Refresh channels',
  description:
    'Look again for every stream and DM you can see (after the bot joined a stream, say), register new ones and announce them; refused ones are offered again.',
  inputSchema: z.object({}),
  outputSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, _input, { signal }) {
    signal.throwIfAborted();
    const report = await context.engine.refreshChannels();
    const lines: string[] = [];
    const status = (id: string) => {
      if (report.added.includes(id)) return 'new';
      if (report.refused.includes(id)) return 'refused by the host';
      if (report.pendingAnnouncement.includes(id)) return 'not confirmed by the host yet';
      return undefined;
    };
    for (const info of report.channels) {
      const marks = [
        status(info.channel.id),
        info.open ? 'open' : 'closed',
        info.muted ? 'muted' : undefined,
      ];
      if (info.missed > 0) marks.push(`${info.missed} missed`);
      lines.push(
        `${channelText(info.channel.id)} ${info.channel.label}: ${marks.filter((m) => m !== undefined).join(', ')}`,
      );
    }
    for (const id of report.removed) lines.push(`${channelText(id)}: gone`);
    const fit = fitToBudget(lines, itemBudget(context.services), ID_BYTES);
    const more = fit.shown < lines.length ? ` (${lines.length - fit.shown} more not shown)` : '';
    const open = report.channels.filter((c) => c.open).length;
    const head = `${plural(report.channels.length, 'channel')}, ${open} open; ${report.added.length} new, ${report.removed.length} gone${more}.`;
    return {
      text: lines.length === 0 ? head : `${head}\n${fit.text}`,
      data: {
        channels: report.channels.length,
        open,
        added: report.added.length,
        removed: report.removed.length,
        pending: report.pendingAnnouncement.length,
        refused: report.refused.length,
      },
    };
  },
});
