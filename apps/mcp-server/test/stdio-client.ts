// main() in-process on stdio, with an SDK client on the other end of its streams: the whole
// stdio path (the server's StdioServerTransport included) without spawning a process.
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/client';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { StreamClientTransport } from './raw-session.js';

export { StreamClientTransport } from './raw-session.js';

/** How the test's client negotiates the era (the v2 client's `versionNegotiation.mode`). */
export type ClientMode = 'legacy' | 'auto' | { pin: '2026-07-28' };

/** One run of `main` on stdio with a connected client. */
export interface StdioRun {
  client: Client;
  transport: StreamClientTransport;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Everything written to stdout (the wire) so far. */
  stdout(): string;
  /** Resolves with the first line the server writes to stdout from now on that matches `pattern`. */
  nextOutputLine(pattern: RegExp): Promise<string>;
  /** Closes the client's end (stdin) and resolves with main's exit code. */
  finish(): Promise<number>;
  /** main's exit code, whenever it returns. */
  exited: Promise<number>;
}

/**
 * Starts `main(argv, env)` on in-memory stdio streams and connects a v2 SDK client to it, in
 * `mode` (default `auto`: the 2026 era, as a newer client picks it).
 */
export async function startStdio(
  argv: string[],
  env: Record<string, string>,
  mode: ClientMode = 'auto',
): Promise<StdioRun> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const errChunks: Buffer[] = [];
  stderr.on('data', (chunk: Buffer) => errChunks.push(chunk));
  const outChunks: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => outChunks.push(chunk));
  const ready = barrier();
  const exited = main(argv, env, { stdin, stdout, stderr, onReady: () => ready.resolve() });
  const failed = exited.then((code) => {
    throw new Error(`main exited with ${code} before serving: ${Buffer.concat(errChunks).toString('utf8')}`);
  });
  await Promise.race([ready.promise, failed]);
  const transport = new StreamClientTransport(stdout, stdin);
  const client = new Client({ name: 'stdio-test', version: '0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => Buffer.concat(errChunks).toString('utf8'),
    stdout: () => Buffer.concat(outChunks).toString('utf8'),
    nextOutputLine: (pattern) =>
      new Promise((resolve) => {
        let text = '';
        const onData = (chunk: Buffer) => {
          text += chunk.toString('utf8');
          const lines = text.split('\n');
          text = lines.pop() ?? '';
          const found = lines.find((line) => pattern.test(line));
          if (found === undefined) return;
          stdout.off('data', onData);
          resolve(found);
        };
        stdout.on('data', onData);
      }),
    exited,
    async finish() {
      await client.close();
      return exited;
    },
  };
}
