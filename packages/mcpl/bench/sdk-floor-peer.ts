// The SDK side of the stdio bench, as its own process: a minimal v2 SDK `Server` on the NDJSON
// transport MCPL's servers use, sending the same `channels/incoming` request, of the same bytes,
// when asked to with `bench/run`, and timing the rounds itself, as server-peer.ts does for MCPL.
import { Server } from '@modelcontextprotocol/server';
import { stdioServerTransport } from '../src/index.js';
import { anyObject, benchMessage } from './shared.js';

const server = new Server({ name: 'sdk-floor', version: '1' }, { capabilities: {} });
server.setRequestHandler('bench/run', { params: anyObject }, async (params) => {
  const rounds = Number(params.rounds ?? 0);
  const started = performance.now();
  for (let i = 0; i < rounds; i += 1) {
    await server.request(
      { method: 'channels/incoming', params: { messages: [benchMessage(i)] } },
      anyObject,
      { timeout: 120_000 },
    );
  }
  return { ms: performance.now() - started };
});
server.onclose = () => process.exit(0);
await server.connect(stdioServerTransport());
