// The SDK floor of the stdio bench, as its own process: the SDK's `Server` alone on the same
// NDJSON transport, sending the same `channels/incoming` request when asked to with `run`.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { z } from 'zod';
import { stdioServerTransport } from '../src/index.js';
import { benchMessage } from './shared.js';

const server = new Server({ name: 'floor', version: '1' }, { capabilities: {} });
const anyResult = z.unknown();
server.fallbackRequestHandler = async (request) => {
  const rounds = Number((request.params as { rounds?: unknown } | undefined)?.rounds ?? 0);
  const started = performance.now();
  for (let i = 0; i < rounds; i += 1) {
    await server.request(
      { method: 'channels/incoming', params: { messages: [benchMessage(i)] } } as never,
      anyResult,
      { timeout: 120_000 },
    );
  }
  return { ms: performance.now() - started };
};
server.onclose = () => process.exit(0);
await server.connect(stdioServerTransport());
