import { InMemoryTransport } from '@modelcontextprotocol/server';
import { McplHost, type McplHostOptions, type McplServer, type McplSession } from '../src/index.js';

/** Connects a host to a server over an in-memory pair. */
export async function connectPair(
  server: McplServer,
  options: Partial<McplHostOptions> = {},
): Promise<{ host: McplHost; session: McplSession }> {
  const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
  const sessionPromise = server.connect(serverSide);
  const host = await McplHost.connect(hostSide, { name: 'test-host', version: '1.0.0', ...options });
  const session = await sessionPromise;
  return { host, session };
}

/**
 * The code a Capability denied answer (SPEC Appendix A: `-32002`, `data: { capability }`) carries
 * on the wire. The MCP SDK v2 (2.4.0) writes every error a request handler throws through its
 * era codec, which turns `-32002` (MCP's old resource-not-found) into `-32602` whatever the
 * method; no hook reaches that step. The message and `data.capability` go out unchanged.
 */
export const CAPABILITY_DENIED_ON_THE_WIRE = -32602;

/** Every capability the toy server advertises, as a grant. */
export const FULL_GRANT = [
  'tools',
  'pushEvents',
  'inferenceLifecycle',
  'modelInfo',
  'contextHooks.beforeInference.observe',
  'contextHooks.beforeInference.inject.beforeUser',
  'contextHooks.beforeInference.inject.system',
  'contextHooks.beforeInference.inject.afterUser',
  'channels.*',
];

/** A logger that keeps what it is told. */
export function recordingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> | undefined }[] = [];
  const at =
    (level: string) =>
    (message: string, fields?: Readonly<Record<string, unknown>>): void => {
      lines.push({ level, message, fields: fields === undefined ? undefined : { ...fields } });
    };
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

/** Resolves on the next turn of the event loop, after every pending microtask. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
