import {
  type CallOptions,
  errorCode,
  foldStreamName,
  readNarrow,
  type Stream,
  type StreamInfoLookup,
  sameStreamName,
  ZmcpError,
} from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { type MonitorContext, plural, StreamNameSchema, streamLabel } from './shared.js';

/** Most streams one call starts. */
const MAX_STREAMS = 20;

const inputSchema = z.object({
  streams: z.array(StreamNameSchema).min(1).max(MAX_STREAMS).describe('Stream names'),
  since_message_id: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("Start (or reset) the cursors here; default: each stream's newest message"),
});

const outputSchema = z.object({
  streams: z.array(
    z.object({
      stream_id: z.number().int(),
      status: z.enum(['started', 'already_monitored', 'restarted']),
      cursor: z.number().int().nullable(),
      subscribed: z.boolean(),
    }),
  ),
  monitored: z.number().int(),
});

interface Entry {
  stream: string;
  stream_id: number;
  status: 'started' | 'already_monitored' | 'restarted';
  cursor: number | null;
  subscribed: boolean;
  note: string | null;
}

async function findStream(services: ToolServices, name: string, call: CallOptions): Promise<Stream> {
  try {
    return await services.directory.stream(name, call);
  } catch (err) {
    if (err instanceof ToolError && err.code === 'TOOLS_NOT_FOUND') {
      throw new ToolError(
        'TOOLS_NOT_FOUND',
        `No stream ${JSON.stringify(name)} is visible to this bot: check the name with list_streams. A private stream is visible only once the bot has been invited to it. Nothing was started.`,
        { field: 'streams', stream: name },
      );
    }
    throw err;
  }
}

async function newestId(
  services: ToolServices,
  stream: Stream,
  lookup: StreamInfoLookup,
  call: CallOptions,
): Promise<number | undefined> {
  const res = await readNarrow(services.client, services.policy, {
    narrow: [{ operator: 'channel', operand: stream.stream_id }],
    range: { kind: 'newest', limit: 1 },
    streams: lookup,
    call,
  });
  return res.messages.at(-1)?.id;
}

/** `start_monitoring`: adds streams to this session's monitor, with a read cursor each. */
export const startMonitoringTool = defineTool({
  name: 'start_monitoring',
  title: 'Start monitoring streams',
  description:
    'Monitor streams for this session: each gets a read cursor (from its newest message now, or since_message_id), and get_unread_messages then reports what is newer. Cursors survive restarts.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'monitor',
  async handler(context: MonitorContext, input, { signal }) {
    const { services, monitor, changes } = context;
    const call: CallOptions = { signal };
    // Everything is checked before anything changes.
    const picked: Stream[] = [];
    for (const name of input.streams) {
      const stream = await findStream(services, name, call);
      if (!picked.some((s) => s.stream_id === stream.stream_id)) picked.push(stream);
    }
    const [lookup, subscriptions] = await Promise.all([
      services.directory.streamLookup(call),
      services.directory.subscriptions(call),
    ]);
    const subscribed = new Set(subscriptions.map((s) => s.stream_id));
    for (const stream of picked) {
      services.policy.checkNarrowScope([{ operator: 'channel', operand: stream.stream_id }], lookup);
      if (stream.invite_only && !subscribed.has(stream.stream_id)) {
        throw new ZmcpError(
          'CORE_ACCESS_DENIED',
          `The bot is not a member of private stream ${JSON.stringify(stream.name)}, so it cannot read it: invite the bot to the stream first. Nothing was started.`,
          { details: { stream: stream.name, reason: 'not-a-member' } },
        );
      }
    }

    const before = await monitor.list();
    const monitoredIds = new Map<number, number | undefined>();
    for (const m of before) if (m.streamId !== undefined) monitoredIds.set(m.streamId, m.lastReadId);
    const isMonitored = (s: Stream) =>
      monitoredIds.has(s.stream_id) || before.some((m) => sameStreamName(m.name, s.name));

    const results: Entry[] = [];
    for (const stream of picked) {
      const ref = { name: stream.name, streamId: stream.stream_id };
      const already = isMonitored(stream);
      if (already && input.since_message_id === undefined) {
        const [kept] = (await monitor.start([ref])).filter((m) => m.streamId === stream.stream_id);
        results.push(entry(stream, 'already_monitored', kept?.lastReadId));
        continue;
      }
      const cursor = input.since_message_id ?? (await newestId(services, stream, lookup, call));
      // A reset starts over: the cursor never moves backwards otherwise.
      if (already) await monitor.stop([ref]);
      await monitor.start([ref]);
      if (cursor !== undefined && cursor > 0) await monitor.advance(ref, cursor);
      results.push(entry(stream, already ? 'restarted' : 'started', cursor === 0 ? undefined : cursor));
    }

    // Zulip sends stream events only to subscribers: join public streams the bot is not on, where
    // the bot may act (joining is something the bot does in a stream: the write allowlist decides).
    const mayJoin = (id: number) => {
      try {
        services.policy.checkWrite({ stream: id }, lookup);
        return true;
      } catch {
        return false;
      }
    };
    const notOn = results.filter((r) => !subscribed.has(r.stream_id));
    for (const r of results) r.subscribed = subscribed.has(r.stream_id);
    if (!services.policy.readOnly) {
      for (const r of notOn) {
        if (!mayJoin(r.stream_id)) {
          r.note =
            'not a stream this session may write to, so the bot does not subscribe and no live updates come from it; get_unread_messages still reads it';
        }
      }
    }
    const toJoin = notOn.filter((r) => r.note === null);
    if (toJoin.length > 0 && services.policy.readOnly) {
      for (const r of toJoin) {
        r.note =
          'read-only mode: the bot cannot subscribe, so no live updates come from this stream; get_unread_messages still reads it';
      }
    } else if (toJoin.length > 0) {
      try {
        const res = await services.client.subscribe(
          { subscriptions: toJoin.map((r) => ({ name: r.stream })), authorizationErrorsFatal: false },
          call,
        );
        const refused = new Set((res.unauthorized ?? []).map(foldStreamName));
        for (const r of toJoin) {
          if (refused.has(foldStreamName(r.stream))) {
            r.note = 'Zulip refused to subscribe the bot, so no live updates come from this stream';
          } else {
            r.subscribed = true;
          }
        }
      } catch (err) {
        if (signal.aborted) throw err;
        const code = errorCode(err);
        for (const r of toJoin) {
          r.note = `subscribing the bot failed (${code ?? 'error'}), so no live updates come from this stream yet; call start_monitoring again to retry`;
        }
      } finally {
        services.directory.invalidate('subscriptions');
        services.directory.invalidate('streams');
      }
    }

    const monitored = (await monitor.list()).length;
    const changed = results.filter((r) => r.status !== 'already_monitored');
    changes.monitoringChanged(changed.map((r) => r.stream));
    const lines = results.map((r) => {
      const status = r.status.replace('_', ' ');
      const cursor = r.cursor === null ? 'no cursor yet (every message is unread)' : `cursor id=${r.cursor}`;
      const sub = r.subscribed ? 'bot subscribed' : 'bot not subscribed';
      return `${streamLabel(r.stream)}: ${status}, ${cursor}, ${sub}${r.note === null ? '' : ` (${r.note})`}`;
    });
    return {
      text: [
        `Monitoring ${plural(monitored, 'stream')} now (${changed.length} started or reset). Unread = messages newer than each cursor; read them with get_unread_messages.`,
        ...lines,
      ].join('\n'),
      data: {
        streams: results.map((r) => ({
          stream_id: r.stream_id,
          status: r.status,
          cursor: r.cursor,
          subscribed: r.subscribed,
        })),
        monitored,
      },
    };
  },
});

function entry(stream: Stream, status: Entry['status'], cursor: number | undefined): Entry {
  return {
    stream: stream.name,
    stream_id: stream.stream_id,
    status,
    cursor: cursor ?? null,
    subscribed: false,
    note: null,
  };
}
