import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import type { Broadcast } from '@zmcp/fleet';

/**
 * The SDK's `ServerEventBus` over a fleet's broadcast (`backend.broadcast` of a PostgreSQL
 * state backend): a change published in any process reaches every `subscriptions/listen` stream
 * open on any process sharing the database (the SDK's router filters per stream). Listeners of
 * this process hear it at once, as with the SDK's in-memory bus; the others within a moment
 * (PostgreSQL's `NOTIFY`, at most once). `topic` keeps apart buses sharing the database.
 */
export function sharedServerEventBus(
  broadcast: Broadcast,
  topic: string,
  onerror?: (err: Error) => void,
): ServerEventBus {
  return {
    publish(event: ServerEvent) {
      try {
        broadcast.publish(topic, event);
      } catch (err) {
        // Params too large for one notification: the event itself still goes out.
        const { params: _dropped, ...bare } = event;
        onerror?.(err as Error);
        broadcast.publish(topic, bare);
      }
    },
    subscribe(listener: (event: ServerEvent) => void) {
      return broadcast.subscribe(topic, (message) => {
        if (isServerEvent(message)) listener(message);
      });
    },
  };
}

function isServerEvent(value: unknown): value is ServerEvent {
  if (typeof value !== 'object' || value === null) return false;
  const { kind, uri } = value as { kind?: unknown; uri?: unknown };
  switch (kind) {
    case 'tools_list_changed':
    case 'prompts_list_changed':
    case 'resources_list_changed':
      return true;
    case 'resource_updated':
      return typeof uri === 'string';
    default:
      return false;
  }
}
