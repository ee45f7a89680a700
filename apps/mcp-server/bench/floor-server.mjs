// The floor of any stdio MCP tool that returns a page: a minimal SDK server whose one tool answers
// with a fixed result read from the file named on the command line, doing no other work.
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const result = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const server = new Server({ name: 'floor', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [{ name: 'page', description: 'Answers with a fixed page.', inputSchema: { type: 'object' } }],
}));
server.setRequestHandler(CallToolRequestSchema, () => result);
await server.connect(new StdioServerTransport());
