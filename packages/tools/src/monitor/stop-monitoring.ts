import type { CallOptions } from '@zmcp/core';
import { sameStreamName } from '@zmcp/core';
import type { StreamRef } from '@zmcp/delivery';
import { z } from 'zod';
import { defineTool } from '../tool.js';
import { type MonitorContext, plural, StreamNameSchema, streamLabel } from './shared.js';

const MAX_STREAMS = 50;

const inputSchema = z.object({
  streams: z.array(StreamNameSchema).min(1).max(MAX_STREAMS).describe('Stream names'),
});

const outputSchema = z.object({
  stopped: z.number().int(),
  not_monitored: z.number().int(),
  monitored: z.number().int(),
});

/** `stop_monitoring`: removes streams from this session's monitor. */
export const stopMonitoringTool = defineTool({
  name: 'stop_monitoring',
  title: 'Stop monitoring streams',
  description:
    'Stop monitoring streams for this session and forget their cursors (the bot stays subscribed).',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'monitor',
  async handler(context: MonitorContext, input, { signal }) {
    const { services, monitor, changes } = context;
    const call: CallOptions = { signal };
    const before = await monitor.list();
    // A stream renamed since it was monitored is still found by its id.
    const lookup = await services.directory.streamLookup(call);
    const refs: StreamRef[] = [];
    const stopped: string[] = [];
    const notMonitored: string[] = [];
    for (const name of input.streams) {
      const streamId = lookup(name)?.stream_id;
      const hit = before.find(
        (m) => (streamId !== undefined && m.streamId === streamId) || sameStreamName(m.name, name),
      );
      if (hit === undefined) {
        if (!notMonitored.includes(name)) notMonitored.push(name);
        continue;
      }
      if (stopped.includes(hit.name)) continue;
      stopped.push(hit.name);
      refs.push(hit.streamId === undefined ? { name: hit.name } : { name: hit.name, streamId: hit.streamId });
    }
    const after = refs.length > 0 ? await monitor.stop(refs) : before;
    if (stopped.length > 0) changes.monitoringChanged(stopped);
    const lines = [
      ...stopped.map((s) => `${streamLabel(s)}: stopped`),
      ...notMonitored.map((s) => `${streamLabel(s)}: was not monitored`),
    ];
    return {
      text: [
        `Stopped monitoring ${plural(stopped.length, 'stream')}; ${plural(after.length, 'stream')} still monitored.`,
        ...lines,
      ].join('\n'),
      data: { stopped: stopped.length, not_monitored: notMonitored.length, monitored: after.length },
    };
  },
});
