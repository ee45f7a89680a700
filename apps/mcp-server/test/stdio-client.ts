// main() in-process on stdio, with an SDK client on the other end of its streams: the whole
// stdio path (the server's StdioServerTransport included) without spawning a process.
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';

/** A client transport over a pair of streams, framed as stdio is: one JSON message a line. */
export class StreamClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #buffer = new ReadBuffer();

  constructor(
    private readonly readable: Readable,
    private readonly writable: Writable,
  ) {}

  async start(): Promise<void> {
    this.readable.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.#buffer.readMessage();
        } catch (err) {
          this.onerror?.(err as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    this.readable.once('end', () => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.writable.write(serializeMessage(message));
  }

  /** Writes raw bytes, as a misbehaving client might. */
  writeRaw(text: string): void {
    this.writable.write(text);
  }

  async close(): Promise<void> {
    this.writable.end();
  }
}

/** One run of `main` on stdio with a connected client. */
export interface StdioRun {
  client: Client;
  transport: StreamClientTransport;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves with the first line the server writes to stdout from now on that matches `pattern`. */
  nextOutputLine(pattern: RegExp): Promise<string>;
  /** Closes the client's end (stdin) and resolves with main's exit code. */
  finish(): Promise<number>;
  /** main's exit code, whenever it returns. */
  exited: Promise<number>;
}

/** Starts `main(argv, env)` on in-memory stdio streams and connects an SDK client to it. */
export async function startStdio(argv: string[], env: Record<string, string>): Promise<StdioRun> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const errChunks: Buffer[] = [];
  stderr.on('data', (chunk: Buffer) => errChunks.push(chunk));
  const ready = barrier();
  const exited = main(argv, env, { stdin, stdout, stderr, onReady: () => ready.resolve() });
  const failed = exited.then((code) => {
    throw new Error(`main exited with ${code} before serving: ${Buffer.concat(errChunks).toString('utf8')}`);
  });
  await Promise.race([ready.promise, failed]);
  const transport = new StreamClientTransport(stdout, stdin);
  const client = new Client({ name: 'stdio-test', version: '0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => Buffer.concat(errChunks).toString('utf8'),
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
