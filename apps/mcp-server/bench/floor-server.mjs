// The floor of any stdio MCP tool that returns a page: a minimal SDK v2 server whose one tool
// answers with a fixed result read from the file named on the command line, doing no other work.
// Served as zulip-mcp is (serveStdio: the era chosen by the opening exchange).
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const result = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const tools = [{ name: 'page', description: 'Answers with a fixed page.', inputSchema: { type: 'object' } }];
serveStdio(() => {
  const server = new Server({ name: 'floor', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', () => ({ tools }));
  server.setRequestHandler('tools/call', () => result);
  return server;
});
