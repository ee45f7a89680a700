import {
  type Notification,
  ProtocolError,
  type Request,
  SdkError,
  SdkErrorCode,
  type StandardSchemaV1,
} from '@modelcontextprotocol/server';
import { McplError } from './errors.js';
import { isPlainObject } from './json.js';

/**
 * What MCPL uses of the SDK's `Protocol`, in either role: the server package's `Server` and the
 * client package's `Client` each carry their own copy of the class.
 */
export interface AnyProtocol {
  request(
    request: Request,
    resultSchema: StandardSchemaV1<Record<string, unknown>>,
    options?: { timeout?: number },
  ): Promise<Record<string, unknown>>;
  notification(notification: Notification): Promise<void>;
  readonly transport: unknown;
}

/**
 * The schema MCPL hands the SDK for the params and results of its own methods: any JSON object,
 * passed through as it is. Each method reads its fields by hand (with its own `-32602` wording
 * for params, `MCPL_BAD_RESPONSE` for results), so a schema library's parse per message would
 * only repeat that work.
 */
export const anyObject: StandardSchemaV1<Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: '@zmcp/mcpl',
    validate: (value: unknown) =>
      isPlainObject(value) ? { value } : { issues: [{ message: 'expected a JSON object' }] },
  },
};

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

/**
 * Sends a request through the SDK's `Protocol` and maps every way it can fail onto one
 * {@link McplError}: the SDK's timeout (`MCPL_TIMEOUT`, after which it has sent
 * `notifications/cancelled`), a closed connection (`MCPL_CLOSED`), an error object from the peer
 * (`MCPL_PEER_ERROR`, with its `rpcCode`), a result that is not an object (`MCPL_BAD_RESPONSE`).
 */
export async function request(
  protocol: AnyProtocol,
  method: string,
  params: Record<string, unknown> | undefined,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  try {
    const message: Request = params === undefined ? { method } : { method, params };
    return await protocol.request(message, anyObject, timeoutOptions(timeoutMs));
  } catch (err) {
    throw requestFailure(err, protocol, method, timeoutMs);
  }
}

function requestFailure(err: unknown, protocol: AnyProtocol, method: string, timeoutMs: number): McplError {
  if (err instanceof McplError) return err;
  if (err instanceof ProtocolError) {
    return new McplError('MCPL_PEER_ERROR', `${method}: the peer answered ${err.code} ${err.message}`, {
      cause: err,
      details: { method, rpcCode: err.code, rpcMessage: err.message, data: err.data },
    });
  }
  if (err instanceof SdkError) {
    if (err.code === SdkErrorCode.RequestTimeout) {
      return new McplError('MCPL_TIMEOUT', `${method}: no answer within ${timeoutMs} ms`, {
        cause: err,
        details: { method, timeoutMs },
      });
    }
    if (err.code === SdkErrorCode.InvalidResult) {
      return new McplError('MCPL_BAD_RESPONSE', `${method}: the result is not an object`, { cause: err });
    }
    if (err.code === SdkErrorCode.ConnectionClosed || err.code === SdkErrorCode.NotConnected) {
      return new McplError('MCPL_CLOSED', `${method}: the connection closed`, { cause: err });
    }
  }
  if (protocol.transport === undefined) {
    return new McplError('MCPL_CLOSED', `${method}: the connection is closed`, { cause: err });
  }
  return new McplError('MCPL_TRANSPORT', `${method}: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
  });
}

/** Sends a notification through the SDK; a closed connection is `MCPL_CLOSED`. */
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
