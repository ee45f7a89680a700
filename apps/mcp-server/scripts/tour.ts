// The scripted client tour `pnpm demo` runs against the demo realm: what an agent sees, step by
// step, ending where the demo's story ends, on a mention beside a chart someone attached, which
// the agent opens. Kept apart from the script so a test runs the same tour.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

type Block = { type: string; text?: string; mimeType?: string; data?: string };

/** Runs the tour against zulip-mcp at `url` (Streamable HTTP), writing each step with `out`. */
export async function tour(url: string, out: (text?: string) => void): Promise<void> {
  // A 2026-07-28 client (it falls back to the 2025 handshake against servers that lack it).
  const client = new Client(
    { name: 'zmcp-demo-tour', version: '1' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const { tools } = await client.listTools();
    out(
      `The agent speaks MCP ${client.getNegotiatedProtocolVersion()} and sees ${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`,
    );
    const step = async (title: string, name: string, args: Record<string, unknown>): Promise<string> => {
      out();
      out(`> ${title}: ${name} ${JSON.stringify(args)}`);
      const result = await client.callTool({ name, arguments: args });
      const blocks = (result.content ?? []) as Block[];
      const texts: string[] = [];
      for (const block of blocks) {
        if (block.type === 'text') {
          texts.push(block.text ?? '');
          out(block.text?.replace(/^/gm, '  '));
        } else if (block.type === 'image') {
          out(
            `  [an image the model looks at: ${block.mimeType}, ${block.data?.length ?? 0} characters of base64]`,
          );
        }
      }
      return texts.join('\n');
    };
    await step('What streams are there?', 'list_streams', {});
    await step('What is going on in #engineering?', 'get_stream_topics', { stream: 'engineering' });
    await step('Search across public streams', 'search_messages', { query: 'runbook' });
    await step('Say hello', 'send_message', {
      stream: 'general',
      topic: 'demo tour',
      content: 'Hello from the zmcp demo tour :wave:',
    });
    // The latest of #engineering > deploys: a chart Bo attached, and a mention of the bot about it.
    const history = await step('Read the latest of a topic', 'fetch_history', {
      stream: 'engineering',
      topic: 'deploys',
      limit: 5,
    });
    // A teammate looks at what people attach: the path is in the message line, as the model reads it.
    // A body's later lines are indented continuations: the message id is on its head line.
    const lines = history.split('\n');
    const at = lines.findIndex((l) => l.includes('/user_uploads/'));
    const path = /\/user_uploads\/[^\s)\]]+/.exec(lines[at] ?? '')?.[0];
    const head = lines
      .slice(0, at + 1)
      .reverse()
      .find((l) => /\bid=\d+\]/.test(l));
    const messageId = /\bid=(\d+)\]/.exec(head ?? '')?.[1];
    if (messageId !== undefined && path !== undefined) {
      await step('Open the chart that was attached', 'fetch_attachment', {
        path,
        message_id: Number(messageId),
      });
    }
  } finally {
    await client.close();
  }
}
