import { ProtocolError } from '@modelcontextprotocol/server';

/**
 * Every failure `@zmcp/mcpl` reports locally, as a stable string code. Callers switch on
 * `err.code`, never on `instanceof` or the message: two copies of the package can coexist.
 */
export type McplErrorCode =
  /** A value handed to the library is malformed: an option, a descriptor, a declaration, a tag. */
  | 'MCPL_INVALID_ARGUMENT'
  /** The §17.2 digest refused its input; `details.reason` is the vector file's code and `details.path` where. */
  | 'MCPL_DIGEST_REFUSED'
  /** The peer did not negotiate MCPL on this connection: it is a plain MCP session. */
  | 'MCPL_NOT_NEGOTIATED'
  /** The initial policy has not been established yet, so nothing capability-dependent may be sent. */
  | 'MCPL_NOT_READY'
  /** The effective grant does not include the capability; `details.capability` names it. */
  | 'MCPL_CAPABILITY_DENIED'
  /** The feature set is declared but not enabled now; `details.featureSet` names it. */
  | 'MCPL_FEATURE_SET_DISABLED'
  /** The feature set is not declared in the manifest; `details.featureSet` names it. */
  | 'MCPL_UNKNOWN_FEATURE_SET'
  /** The feature set's `uses` does not declare the capability being exercised (§6.4 rule 2). */
  | 'MCPL_DECLARATION_MISMATCH'
  /** The channel id is not registered on this connection (or was refused by the host). */
  | 'MCPL_UNKNOWN_CHANNEL'
  /** The peer answered with a JSON-RPC error object; `details.rpcCode`, `details.rpcMessage`, `details.data`. */
  | 'MCPL_PEER_ERROR'
  /** The peer's result does not have the shape the method defines. */
  | 'MCPL_BAD_RESPONSE'
  /** The host's dialect does not do this: a 0.4 host asked to send a policy Request, a 0.5 host a removed method. */
  | 'MCPL_DIALECT_UNSUPPORTED'
  /** The peer did not answer within the request's timeout; `details.timeoutMs`. */
  | 'MCPL_TIMEOUT'
  /** The connection is closed, or closed while the request was in flight. */
  | 'MCPL_CLOSED'
  /** A transport could not be started or written to (spawn failure, socket error, busy listener). */
  | 'MCPL_TRANSPORT';

/** Options accepted by {@link McplError}. */
export interface McplErrorOptions {
  cause?: unknown;
  details?: Readonly<Record<string, unknown>>;
}

const brand = Symbol.for('@zmcp/mcpl.McplError');

/** The one local error class of `@zmcp/mcpl`; wire errors go out as JSON-RPC error objects instead. */
export class McplError extends Error {
  override readonly name: string = 'McplError';
  readonly code: McplErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: McplErrorCode, message: string, options: McplErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, brand, { value: true });
  }

  /** True for any `McplError`, including one from another copy of the package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}

/**
 * The JSON-RPC error codes of SPEC Appendix A, as they travel on the wire. Local failures are
 * {@link McplError}s; these are what a peer receives in an error object.
 */
export const McplRpcCode = {
  /** A message used a feature set that is not enabled; `data: { featureSet }`. */
  FeatureSetNotEnabled: -32001,
  /** The method needs a capability outside the effective grant; `data: { capability }`. */
  CapabilityDenied: -32002,
  /** A message named a feature set the manifest does not declare; `data: { featureSet }`. */
  UnknownFeatureSet: -32003,
  /** `state/rollback` named a pruned or unknown checkpoint; `data: { checkpoint }`. */
  CheckpointNotFound: -32005,
  /** No permission to publish to or receive from the channel; `data: { channelId }`. */
  ChannelNotPermitted: -32017,
  /** The channel id is not registered on this connection; `data: { channelId }`. */
  UnknownChannel: -32023,
  /** The server could not open the requested channel. */
  ChannelOpenFailed: -32024,
  /** JSON-RPC: the message is not a valid request. */
  InvalidRequest: -32600,
  /** JSON-RPC: no such method. */
  MethodNotFound: -32601,
  /** JSON-RPC: the params are malformed. */
  InvalidParams: -32602,
  /** JSON-RPC: the handler failed. */
  InternalError: -32603,
} as const;

/** The Appendix A messages, one per code. */
const rpcMessages: Record<number, string> = {
  [McplRpcCode.FeatureSetNotEnabled]: 'Feature set not enabled',
  [McplRpcCode.CapabilityDenied]: 'Capability denied',
  [McplRpcCode.UnknownFeatureSet]: 'Unknown feature set',
  [McplRpcCode.CheckpointNotFound]: 'Checkpoint not found',
  [McplRpcCode.ChannelNotPermitted]: 'Channel not permitted',
  [McplRpcCode.UnknownChannel]: 'Unknown channel',
  [McplRpcCode.ChannelOpenFailed]: 'Channel open failed',
};

/**
 * A JSON-RPC error object to throw from a request handler: the SDK answers the request with
 * `code`, `message` (Appendix A's when omitted) and `data`. It is the SDK's `ProtocolError`.
 */
export function rpcError(
  code: number,
  message?: string,
  data?: Readonly<Record<string, unknown>>,
): ProtocolError {
  return new ProtocolError(code, message ?? rpcMessages[code] ?? 'Error', data);
}

/** The capability-denied error object of §5.4 (`-32002`, `data: { capability }`). */
export function capabilityDenied(capability: string): ProtocolError {
  return rpcError(McplRpcCode.CapabilityDenied, undefined, { capability });
}

/** A failure as a short code for log fields, never its message (messages may carry peer text). */
export function errorCode(err: unknown): string {
  if (err instanceof McplError) return err.code;
  if (err instanceof ProtocolError) return `rpc ${err.code}`;
  if (err instanceof Error) return err.name;
  return typeof err;
}
