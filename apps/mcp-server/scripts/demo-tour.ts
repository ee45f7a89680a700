// `pnpm demo`: serves the seeded demo realm over Streamable HTTP, prints how to connect
// Claude Code, Cursor and the MCP Inspector, runs a short scripted client tour that prints
// what an agent sees, then keeps serving until Ctrl-C.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { main } from '../src/main.js';

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

async function tour(): Promise<void> {
  // A 2026-07-28 client (it falls back to the 2025 handshake against servers that lack it).
  const client = new Client(
    { name: 'zmcp-demo-tour', version: '1' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { tools } = await client.listTools();
  out(
    `The agent speaks MCP ${client.getNegotiatedProtocolVersion()} and sees ${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`,
  );
  const step = async (title: string, name: string, args: Record<string, unknown>) => {
    out();
    out(`> ${title}: ${name} ${JSON.stringify(args)}`);
    const result = await client.callTool({ name, arguments: args });
    const blocks = (result.content ?? []) as { type: string; text?: string }[];
    for (const block of blocks) if (block.type === 'text') out(block.text?.replace(/^/gm, '  '));
  };
  await step('What streams are there?', 'list_streams', {});
  await step('What is going on in #engineering?', 'get_stream_topics', { stream: 'engineering' });
  await step('Read the latest of a topic', 'fetch_history', {
    stream: 'engineering',
    topic: 'deploys',
    limit: 5,
  });
  await step('Search across public streams', 'search_messages', { query: 'runbook' });
  await step('Say hello', 'send_message', {
    stream: 'general',
    topic: 'demo tour',
    content: 'Hello from the zmcp demo tour :wave:',
  });
  await client.close();
}

try {
  await tour();
} catch (err) {
  out(`The tour stopped early: ${(err as Error).message}`);
}
out();
out('Still serving; press Ctrl-C to stop.');
process.exitCode = await serving;
