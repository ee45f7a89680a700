// The floor of any stdio MCP tool that returns a page: a minimal SDK server whose one tool
// answers with n bytes of text and does no other work.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'floor', version: '1.0.0' });
server.registerTool(
  'bytes',
  { description: 'Answers with n bytes of text.', inputSchema: { n: z.number().int().min(0) } },
  async ({ n }) => ({ content: [{ type: 'text', text: 'x'.repeat(n) }] }),
);
await server.connect(new StdioServerTransport());
