// `pnpm demo`: serves the seeded demo realm over Streamable HTTP, prints how to connect
// Claude Code, Cursor and the MCP Inspector, runs a short scripted client tour that prints
// what an agent sees (scripts/tour.ts; it ends opening the chart someone attached), then keeps
// serving until Ctrl-C.
import { main } from '../src/main.js';
import { tour } from './tour.js';

const port = process.env.ZMCP_HTTP_PORT ?? '0';
const shutdown = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => shutdown.abort());

const out = (text = '') => process.stdout.write(`${text}\n`);

let resolveUrl: (url: string) => void = () => {};
const ready = new Promise<string>((resolve) => {
  resolveUrl = resolve;
});
const serving = main(
  ['--demo', '--http', '--port', port],
  { ...process.env, ZMCP_LOG_LEVEL: 'warn' },
  {
    shutdown: shutdown.signal,
    onReady: (info) => {
      if (info.transport === 'http') resolveUrl(info.url);
    },
  },
);

const url = await Promise.race([ready, serving.then((code) => Promise.reject(new Error(`exited ${code}`)))]);

out(`zulip-mcp is serving a simulated Zulip realm at ${url}`);
out();
out('Connect a client:');
out(`  Claude Code     claude mcp add --transport http zulip ${url}`);
out(`  Cursor          ~/.cursor/mcp.json: { "mcpServers": { "zulip": { "url": "${url}" } } }`);
out(`  MCP Inspector   npx @modelcontextprotocol/inspector  (transport: Streamable HTTP, URL: ${url})`);
out();

try {
  await tour(url, out);
} catch (err) {
  out(`The tour stopped early: ${(err as Error).message}`);
}
out();
out('Still serving; press Ctrl-C to stop.');
process.exitCode = await serving;
