import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { McplError } from './errors.js';
import { isPlainObject } from './json.js';

type Id = string | number;

/** What the lane writes through: the transport decorator it sits in. */
export interface LaneWire {
  send(message: JSONRPCMessage): Promise<void>;
  /** Where a failed write of an answer is reported (the SDK's `onerror`, as for its own answers). */
  fail(error: Error): void;
}

interface Pending {
  readonly method: string;
  readonly timeoutMs: number;
  readonly timer: ReturnType<typeof setTimeout>;
  resolve(result: Record<string, unknown>): void;
  reject(error: McplError): void;
}

// The prefix of the lane's own request ids. The SDK numbers its requests, so a string id can
// never be one of its own, and a response carrying one is the lane's or nobody's.
const ID_PREFIX = 'mcpl:';

const noop = () => {};

/**
 * The direct lane: requests of the high-volume MCPL methods (`channels/incoming`) carried on the
 * same transport beside the SDK's `Protocol`, not through it. `Protocol.connect` runs its zod
 * type guards three times on every message it reads, and that is most of a round trip's cost
 * (see the README's benchmark); nothing public lets a message skip them.
 *
 * The lane keeps the SDK's contract for what it carries: ids of its own (`mcpl:<n>`, strings,
 * never one the SDK sends), a timeout per request after which `notifications/cancelled` is
 * sent, every pending request failed when the connection closes, no answer to a request the
 * peer cancelled, and handlers started at the point the SDK starts its own (two microtasks after
 * the message is read), so the order in which messages are handled is unchanged. Failures are
 * the same {@link McplError}s as every other request's.
 */
export class DirectLane {
  readonly #served = new Map<string, (params: unknown) => unknown>();
  readonly #pending = new Map<string, Pending>();
  /** Requests the lane is answering, and those of them the peer cancelled. */
  readonly #answering = new Set<Id>();
  readonly #cancelled = new Set<Id>();
  #wire: LaneWire | undefined;
  #next = 0;
  #closed = false;

  /** Writes through `wire` from now on. */
  attach(wire: LaneWire): void {
    this.#wire = wire;
  }

  /**
   * Answers requests of `method` here: the handler's value is the result, a thrown error (or a
   * rejection) the error object, read as the SDK reads one (`code` when an integer, else -32603).
   */
  serve(method: string, handler: (params: unknown) => unknown): void {
    this.#served.set(method, handler);
  }

  /**
   * Sends a request and resolves with its result object.
   *
   * @throws McplError `MCPL_CLOSED`, `MCPL_TIMEOUT`, `MCPL_PEER_ERROR` (`details.rpcCode`,
   * `rpcMessage`, `data`), `MCPL_BAD_RESPONSE` (a result that is not an object), `MCPL_TRANSPORT`.
   */
  request(
    method: string,
    params: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    const wire = this.#wire;
    if (this.#closed || wire === undefined) {
      return Promise.reject(new McplError('MCPL_CLOSED', `${method}: the connection is closed`));
    }
    const id = `${ID_PREFIX}${this.#next++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.#timedOut(id), timeoutMs);
      this.#pending.set(id, { method, timeoutMs, timer, resolve, reject });
      wire.send({ jsonrpc: '2.0', id, method, params }).catch((err: unknown) => {
        const pending = this.#settle(id);
        const closed = this.#closed || (err as { code?: unknown } | null)?.code === 'MCPL_CLOSED';
        pending?.reject(
          closed
            ? new McplError('MCPL_CLOSED', `${method}: the connection closed`, { cause: err })
            : new McplError(
                'MCPL_TRANSPORT',
                `${method}: ${err instanceof Error ? err.message : String(err)}`,
                {
                  cause: err,
                },
              ),
        );
      });
    });
  }

  /**
   * Reads one incoming message: true when it was the lane's (a request it serves, or the
   * answer to one of its requests) and must not reach the SDK. A cancellation of a request it
   * is answering is noted and passed on.
   */
  take(message: JSONRPCMessage): boolean {
    if ('method' in message) {
      if (this.#served.size === 0) return false;
      if (!('id' in message)) {
        if (message.method === 'notifications/cancelled' && this.#answering.size > 0) {
          const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
          if (this.#answering.has(requestId as Id)) this.#cancelled.add(requestId as Id);
        }
        return false;
      }
      const handler = this.#served.get(message.method);
      const id: unknown = message.id;
      if (handler === undefined || (typeof id !== 'string' && typeof id !== 'number')) return false;
      this.#answer(id, handler, message.params);
      return true;
    }
    const id: unknown = (message as { id?: unknown }).id;
    if (typeof id !== 'string' || this.#pending.size === 0) return false;
    const pending = this.#settle(id);
    if (pending === undefined) return false;
    if ('result' in message) {
      const result: unknown = message.result;
      if (isPlainObject(result)) pending.resolve(result);
      else
        pending.reject(new McplError('MCPL_BAD_RESPONSE', `${pending.method}: the result is not an object`));
    } else {
      pending.reject(peerError(pending.method, (message as { error?: unknown }).error));
    }
    return true;
  }

  /** The connection closed: every pending request fails with `MCPL_CLOSED`, nothing more is answered. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const request of pending) {
      clearTimeout(request.timer);
      request.reject(new McplError('MCPL_CLOSED', `${request.method}: the connection closed`));
    }
  }

  #settle(id: string): Pending | undefined {
    const pending = this.#pending.get(id);
    if (pending === undefined) return undefined;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    return pending;
  }

  #timedOut(id: string): void {
    const pending = this.#settle(id);
    if (pending === undefined) return;
    const reason = `${pending.method}: no answer within ${pending.timeoutMs} ms`;
    this.#wire
      ?.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } })
      .catch(noop);
    pending.reject(
      new McplError('MCPL_TIMEOUT', reason, {
        details: { method: pending.method, timeoutMs: pending.timeoutMs },
      }),
    );
  }

  #answer(id: Id, handler: (params: unknown) => unknown, params: unknown): void {
    this.#answering.add(id);
    // Two hops, as the SDK's `_onrequest` takes before it calls a handler.
    Promise.resolve()
      .then(noop)
      .then(() => handler(params))
      .then(
        (result) => this.#reply(id, { jsonrpc: '2.0', id, result: result as Record<string, unknown> }),
        (err: unknown) => this.#reply(id, { jsonrpc: '2.0', id, error: errorObject(err) }),
      );
  }

  #reply(id: Id, message: JSONRPCMessage): void {
    this.#answering.delete(id);
    if (this.#cancelled.delete(id) || this.#closed) return;
    this.#wire?.send(message).catch((err: unknown) => {
      this.#wire?.fail(
        new Error(`Failed to send response: ${err instanceof Error ? err.message : String(err)}`),
      );
    });
  }
}

/** The error object of a thrown value, as the SDK writes one for its handlers. */
function errorObject(err: unknown): { code: number; message: string; data?: unknown } {
  const { code, message, data } = (isPlainObject(err) || err instanceof Error ? err : {}) as {
    code?: unknown;
    message?: unknown;
    data?: unknown;
  };
  return {
    code: Number.isSafeInteger(code) ? (code as number) : ErrorCode.InternalError,
    message: typeof message === 'string' ? message : 'Internal error',
    ...(data === undefined ? {} : { data }),
  };
}

function peerError(method: string, error: unknown): McplError {
  if (!isPlainObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
    return new McplError(
      'MCPL_BAD_RESPONSE',
      `${method}: the answer is neither a result nor an error object`,
    );
  }
  return new McplError('MCPL_PEER_ERROR', `${method}: the peer answered ${error.code} ${error.message}`, {
    details: { method, rpcCode: error.code, rpcMessage: error.message, data: error.data },
  });
}
