import type { CallOptions } from '@zmcp/core';
import { escapeMsgName, sameStreamName } from '@zmcp/core';
import { ToolError } from '../errors.js';
import { fitToBudget } from '../page.js';
import type { ResourceContents, ResourceDefinition, ResourceTemplateDefinition } from '../tool.js';
import {
  CHANNEL_URI_TEMPLATE,
  channelUri,
  countText,
  countUnread,
  isShownUnread,
  itemBudget,
  liveUpdates,
  type MonitorContext,
  mapInBatches,
  plural,
  readStreamUnread,
  resolveMonitored,
  STATUS_URI,
  SUMMARY_URI,
  streamLabel,
} from './shared.js';

/** Streams a summary counts; the rest are named as a number (get_monitored_channels pages them). */
const SUMMARY_STREAMS = 50;
/** Messages one stream's unread resource shows. */
const CHANNEL_MESSAGES = 50;

/** `zulip://unread/summary`: per monitored stream, the unread count and the newest unread id. */
export function unreadSummaryResource(context: MonitorContext): ResourceDefinition {
  const { services, monitor } = context;
  return {
    uri: SUMMARY_URI,
    name: 'unread-summary',
    title: 'Unread summary',
    description:
      'Per monitored stream: how many messages are unread (new since this session’s cursor, not the bot’s own, not /nobots) and the newest unread id. Reading it moves no cursor.',
    mimeType: 'text/plain',
    async read({ signal }): Promise<ResourceContents> {
      const call: CallOptions = { signal };
      const entries = await monitor.list();
      if (entries.length === 0) {
        return { mimeType: 'text/plain', text: 'No streams are monitored (start_monitoring begins).' };
      }
      const lookup = await services.directory.streamLookup(call);
      const streams = resolveMonitored(entries.slice(0, SUMMARY_STREAMS), lookup);
      const counts = await mapInBatches(streams, (s) => countUnread(services, s, lookup, call));
      const lines = streams.map((s, i) => {
        const c = counts[i] as (typeof counts)[number];
        if (c.error !== undefined)
          return `${streamLabel(s.name)}: cannot be read (${escapeMsgName(c.error)})`;
        return `${streamLabel(s.name)}: ${countText(c)}${c.newestId === undefined ? '' : `, newest id=${c.newestId}`}`;
      });
      const total = counts.reduce((n, c) => n + c.unread, 0);
      const more = counts.some((c) => c.more);
      const rest = entries.length - streams.length;
      const head = `${total}${more ? '+' : ''} unread in ${plural(entries.length, 'monitored stream')} (get_unread_messages reads them).`;
      const page = fitToBudget(lines, itemBudget(services));
      const tail =
        rest > 0 || page.truncated
          ? [`… ${entries.length - page.shown} more streams: get_monitored_channels lists them.`]
          : [];
      return { mimeType: 'text/plain', text: [head, page.text, ...tail].join('\n') };
    },
  };
}

/** `zulip://monitoring/status`: the monitored streams, their cursors, and whether live updates run. */
export function monitoringStatusResource(context: MonitorContext): ResourceDefinition {
  const { services, monitor, watcher } = context;
  return {
    uri: STATUS_URI,
    name: 'monitoring-status',
    title: 'Monitoring status',
    description:
      'JSON: the streams this session monitors with their read cursors (the id of the last message counted as read), and whether live resource updates are running and, if not, why.',
    mimeType: 'application/json',
    async read(): Promise<ResourceContents> {
      const entries = await monitor.list();
      const status = {
        streams: entries.map((e) => ({
          stream: escapeMsgName(e.name),
          stream_id: e.streamId ?? null,
          cursor: e.lastReadId ?? null,
          uri: channelUri(e.name),
        })),
        live_updates: liveUpdates(watcher),
        read_only: services.policy.readOnly,
      };
      return { mimeType: 'application/json', text: JSON.stringify(status) };
    },
  };
}

/** `zulip://channel/{stream}/unread`: one monitored stream's unread messages, without moving its cursor. */
export function channelUnreadTemplate(context: MonitorContext): ResourceTemplateDefinition {
  const { services, monitor } = context;
  return {
    uriTemplate: CHANNEL_URI_TEMPLATE,
    name: 'channel-unread',
    title: 'Unread messages of a monitored stream',
    description:
      'The unread message lines of one monitored stream (newer than this session’s cursor), oldest first. Reading it moves no cursor; get_unread_messages does. The stream name is URI-encoded.',
    mimeType: 'text/plain',
    async list() {
      const entries = await monitor.list();
      return entries.map((e) => ({ uri: channelUri(e.name), name: `${streamLabel(e.name)} unread` }));
    },
    async read(_uri, variables, { signal }): Promise<ResourceContents> {
      const call: CallOptions = { signal };
      const wanted = variables.stream ?? '';
      const lookup = await services.directory.streamLookup(call);
      const stream = resolveMonitored(await monitor.list(), lookup).find(
        (s) => sameStreamName(s.entry.name, wanted) || sameStreamName(s.name, wanted),
      );
      if (stream === undefined) {
        throw new ToolError(
          'TOOLS_NOT_FOUND',
          `Stream ${JSON.stringify(wanted.slice(0, 200))} is not monitored; start_monitoring adds it.`,
          { stream: wanted.slice(0, 200) },
        );
      }
      const read = await readStreamUnread(
        services,
        stream,
        stream.cursor ?? 0,
        CHANNEL_MESSAGES,
        lookup,
        call,
      );
      const visible = read.fetched.filter((m) => isShownUnread(services, m));
      const page = fitToBudget(await services.lines(visible, call), itemBudget(services));
      const since = stream.cursor === undefined ? 'from the start' : `after id=${stream.cursor}`;
      const more = read.hasMore || page.shown < visible.length;
      const head =
        visible.length === 0
          ? `${streamLabel(stream.name)}: nothing unread ${since}.`
          : `${streamLabel(stream.name)}: ${plural(page.shown, 'unread message')} ${since}, oldest first${more ? '; more follow (get_unread_messages pages through them)' : ''}.`;
      return { mimeType: 'text/plain', text: page.text === '' ? head : `${head}\n${page.text}` };
    },
  };
}
