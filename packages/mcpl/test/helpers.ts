import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
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
