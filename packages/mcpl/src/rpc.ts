import type { Protocol, RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  type JSONRPCMessage,
  McpError,
  type MessageExtraInfo,
  type Notification,
  type Request,
  type Result,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { McplError } from './errors.js';
import { isPlainObject } from './json.js';
import { DirectLane } from './lane.js';

// Results are checked by hand (an object, then each method's fields): a schema parse per
// message is the SDK's largest cost on this path.
const anyResult = z.unknown();

// biome-ignore lint/suspicious/noExplicitAny: the SDK's Protocol is generic over its own unions.
export type AnyProtocol = Protocol<any, any, any>;

type RequestExtra = RequestHandlerExtra<Request, Notification>;

/**
 * Dispatches the methods the SDK does not know through its public fallback handlers, one
 * table lookup per message instead of one schema parse; an unknown method is `-32601`.
 */
export class MethodTable {
  readonly #requests = new Map<string, (params: unknown, extra: RequestExtra) => unknown>();
  readonly #notifications = new Map<string, (params: unknown) => unknown>();

  constructor(protocol: AnyProtocol) {
    protocol.fallbackRequestHandler = async (
      message: { method: string; params?: unknown },
      extra: RequestExtra,
    ) => {
      const handler = this.#requests.get(message.method);
      if (handler === undefined) {
        const error = new McpError(ErrorCode.MethodNotFound, 'Method not found');
        error.message = 'Method not found';
        throw error;
      }
      return handler(message.params, extra);
    };
    protocol.fallbackNotificationHandler = async (message: { method: string; params?: unknown }) => {
      await this.#notifications.get(message.method)?.(message.params);
    };
  }

  /** Serves requests of `method`. */
  request(method: string, handler: (params: unknown, extra: RequestExtra) => unknown): void {
    this.#requests.set(method, handler);
  }

  /** Hears notifications of `method`. */
  notification(method: string, handler: (params: unknown) => unknown): void {
    this.#notifications.set(method, handler);
  }
}

// The SDK only reads its request options: one frozen object per timeout serves every request.
const optionsByTimeout = new Map<number, Readonly<{ timeout: number }>>();

function timeoutOptions(timeout: number): { timeout: number } {
  let options = optionsByTimeout.get(timeout);
  if (options === undefined) {
    options = Object.freeze({ timeout });
    if (optionsByTimeout.size < 64) optionsByTimeout.set(timeout, options);
  }
  return options;
}

function rpcMessage(err: McpError): string {
  const prefix = `MCP error ${err.code}: `;
  return err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
}

/**
 * Sends a request through the SDK and maps every way it can fail onto one {@link McplError}:
 * the timeout (`MCPL_TIMEOUT`, after which the SDK sends `notifications/cancelled`), a closed
 * connection (`MCPL_CLOSED`), an error object from the peer (`MCPL_PEER_ERROR`, with its
 * `rpcCode`), a result that is not an object (`MCPL_BAD_RESPONSE`). `onAnswer` runs as soon as
 * the answer (or the failure) is in, before anything read after it is handled.
 */
export async function request(
  protocol: AnyProtocol,
  method: string,
  params: Record<string, unknown> | undefined,
  timeoutMs: number,
  onAnswer?: () => void,
): Promise<Record<string, unknown>> {
  const started = performance.now();
  try {
    const message: Request = params === undefined ? { method } : { method, params };
    const pending = protocol.request(message, anyResult, timeoutOptions(timeoutMs));
    // The SDK settles `pending` as the answer is read, so this runs one microtask later: before
    // the handler of any message read after the answer, which the SDK starts later still.
    if (onAnswer !== undefined) pending.then(onAnswer, onAnswer);
    const result: unknown = await pending;
    if (!isPlainObject(result))
      throw new McplError('MCPL_BAD_RESPONSE', `${method}: the result is not an object`);
    return result;
  } catch (err) {
    // The SDK's own timeout is an McpError -32001, the code a peer uses for a disabled feature
    // set: it is ours only when the full timeout has passed and it carries the SDK's data.
    const timedOut =
      err instanceof McpError &&
      err.code === ErrorCode.RequestTimeout &&
      (err.data as { timeout?: unknown } | undefined)?.timeout === timeoutMs &&
      performance.now() - started >= timeoutMs - 1;
    throw requestFailure(err, protocol, method, timedOut, timeoutMs);
  }
}

function requestFailure(
  err: unknown,
  protocol: AnyProtocol,
  method: string,
  timedOut: boolean,
  timeoutMs: number,
): McplError {
  if (timedOut) {
    return new McplError('MCPL_TIMEOUT', `${method}: no answer within ${timeoutMs} ms`, {
      details: { method, timeoutMs },
    });
  }
  if (err instanceof McplError) return err;
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed && protocol.transport === undefined) {
      return new McplError('MCPL_CLOSED', `${method}: the connection closed`, { cause: err });
    }
    return new McplError('MCPL_PEER_ERROR', `${method}: the peer answered ${err.code} ${rpcMessage(err)}`, {
      cause: err,
      details: { method, rpcCode: err.code, rpcMessage: rpcMessage(err), data: err.data },
    });
  }
  if (protocol.transport === undefined) {
    return new McplError('MCPL_CLOSED', `${method}: the connection is closed`, { cause: err });
  }
  return new McplError('MCPL_TRANSPORT', `${method}: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
  });
}

/** Sends a notification; a closed connection is `MCPL_CLOSED`. */
export async function notify(
  protocol: AnyProtocol,
  method: string,
  params: Record<string, unknown> | undefined,
): Promise<void> {
  try {
    const message: Notification = params === undefined ? { method } : { method, params };
    await protocol.notification(message);
  } catch (err) {
    if (err instanceof McplError) throw err;
    throw new McplError('MCPL_CLOSED', `${method}: the connection is closed`, { cause: err });
  }
}

/**
 * A transport decorator that lets the library act right after the answer to a given request
 * has been handed to the wire, before anything else is written: a channel opens only once its
 * `channels/open` answer (and history) is out, so no live message can overtake it. It also
 * lets the server add its per-host `experimental.mcpl` to the `initialize` answer, which the
 * SDK builds from one static capabilities object. And it carries the {@link DirectLane}.
 */
export class SequencedTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;
  /** Rewrites an outgoing message just before it is sent (the `initialize` answer gains `experimental.mcpl`). */
  rewrite?: ((message: JSONRPCMessage) => JSONRPCMessage) | undefined;
  /** The requests carried beside the SDK's `Protocol` on this transport. */
  readonly lane: DirectLane;
  readonly #inner: Transport;
  readonly #afterAnswer = new Map<string | number, () => void>();

  constructor(inner: Transport, lane: DirectLane = new DirectLane()) {
    this.#inner = inner;
    this.lane = lane;
    lane.attach({ send: (message) => this.send(message), fail: (error) => this.onerror?.(error) });
    inner.onmessage = (message, extra) => {
      if (!lane.take(message)) this.onmessage?.(message, extra);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      lane.close();
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** Runs `action` right after the answer to request `id` has been sent. */
  afterAnswer(id: string | number, action: () => void): void {
    this.#afterAnswer.set(id, action);
  }

  /** Forgets an action whose request failed before it was answered with a result. */
  forget(id: string | number): void {
    this.#afterAnswer.delete(id);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  send(outgoing: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const message = this.rewrite === undefined ? outgoing : this.rewrite(outgoing);
    const sent = this.#inner.send(message, options);
    if (this.#afterAnswer.size === 0) return sent;
    if ('id' in message && ('result' in message || 'error' in message) && message.id !== undefined) {
      const action = this.#afterAnswer.get(message.id);
      if (action !== undefined) {
        this.#afterAnswer.delete(message.id);
        if ('result' in message) action();
      }
    }
    return sent;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }
}

/** Result type alias for handlers. */
export type HandlerResult = Result;
