import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  CallToolResult,
  JSONRPCMessage,
  RequestId,
  ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { isObject } from './stdio.js';

/** The parts of a tools/call request the server's handler reads. */
export interface ToolCallParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  _meta?: { progressToken?: string | number | undefined; [key: string]: unknown } | undefined;
}

/** What the handler gets beside the params: the same members the SDK's handler extra carries. */
export interface ToolCallExtra {
  requestId: RequestId;
  /** Aborted when the client cancels the request or the transport closes. */
  signal: AbortSignal;
  _meta?: ToolCallParams['_meta'];
  /** Sends a notification about this request; dropped once the request was cancelled. */
  sendNotification(notification: ServerNotification): Promise<void>;
}

/** The server's tools/call handler, the same function the SDK's path calls. */
export type ToolCallHandler = (params: ToolCallParams, extra: ToolCallExtra) => Promise<CallToolResult>;

/** JSON-RPC's code for an error the handler did not give a code to. */
const INTERNAL_ERROR = -32603;

// The SDK's marker of a request that belongs to a task (MCP's experimental tasks): such a call
// is left to the SDK, which owns the task store.
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/**
 * The params of a tools/call this module serves, or undefined for one it leaves to the SDK: a
 * call that asks for a task or belongs to one, or whose params the SDK's schema would refuse
 * (the SDK then answers it as it always has).
 */
function claimable(params: unknown): ToolCallParams | undefined {
  if (!isObject(params) || typeof params.name !== 'string' || 'task' in params) return undefined;
  if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isObject(meta) || RELATED_TASK in meta) return undefined;
    const token = meta.progressToken;
    if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') return undefined;
  }
  return params as unknown as ToolCallParams;
}

/**
 * Serves tools/call on a transport beside the SDK's `Protocol`, which keeps everything else
 * (initialize, lists, resources, prompts, pings, server-sent requests). Call after the SDK
 * server connected to `transport`: this wraps the handlers the SDK set on it.
 *
 * A tools/call is the hot path of a session, and the SDK's own path runs several schema checks
 * per request and per result that the call contract already guarantees (the handler validates
 * the arguments and returns a `CallToolResult` by type), about 0.3 ms a call on a small machine.
 * What the SDK does around a handler is kept:
 * the signal aborts on `notifications/cancelled` for the request and when the transport closes;
 * a cancelled request is never answered and sends no more notifications; a handler's failure
 * becomes a JSON-RPC error with its code (`-32603` when it has none), message and data.
 */
export function serveToolCallsDirectly(
  transport: Transport,
  handle: ToolCallHandler,
  onerror: (error: Error) => void,
): void {
  const toSdk = transport.onmessage;
  const closeSdk = transport.onclose;
  const inFlight = new Map<RequestId, AbortController>();

  const serve = (id: RequestId, params: ToolCallParams): void => {
    const controller = new AbortController();
    inFlight.set(id, controller);
    const signal = controller.signal;
    const extra: ToolCallExtra = {
      requestId: id,
      signal,
      _meta: params._meta,
      sendNotification: async (notification) => {
        if (signal.aborted) return;
        await transport.send({ ...notification, jsonrpc: '2.0' }, { relatedRequestId: id });
      },
    };
    Promise.resolve()
      .then(() => handle(params, extra))
      .then(
        async (result) => {
          if (signal.aborted) return;
          await transport.send({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
        },
        async (thrown: unknown) => {
          if (signal.aborted) return;
          const error: { code?: unknown; message?: unknown; data?: unknown } =
            typeof thrown === 'object' && thrown !== null ? thrown : {};
          const body: { code: number; message: string; data?: unknown } = {
            code: Number.isSafeInteger(error.code) ? (error.code as number) : INTERNAL_ERROR,
            message: typeof error.message === 'string' ? error.message : 'Internal error',
          };
          if (error.data !== undefined) body.data = error.data;
          await transport.send({ jsonrpc: '2.0', id, error: body });
        },
      )
      .catch((err: unknown) => onerror(new Error(`Failed to send response: ${String(err)}`)))
      .finally(() => {
        if (inFlight.get(id) === controller) inFlight.delete(id);
      });
  };

  transport.onmessage = (message, extra) => {
    if ('method' in message) {
      if (message.method === 'tools/call' && 'id' in message) {
        const params = claimable(message.params);
        if (params !== undefined) return serve(message.id, params);
      } else if (message.method === 'notifications/cancelled' && isObject(message.params)) {
        const { requestId, reason } = message.params;
        if (typeof requestId === 'string' || typeof requestId === 'number') {
          inFlight.get(requestId)?.abort(reason);
        }
      }
    }
    toSdk?.(message, extra);
  };

  transport.onclose = () => {
    for (const controller of inFlight.values()) controller.abort();
    inFlight.clear();
    closeSdk?.();
  };
}
