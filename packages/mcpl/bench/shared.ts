import type { StandardSchemaV1 } from '@modelcontextprotocol/server';
import type { ChannelDescriptor, ChannelMessage, McplSession } from '../src/index.js';
import { McplServer } from '../src/index.js';

export const channel: ChannelDescriptor = {
  id: 'bench:general',
  type: 'bench',
  label: '#general',
  direction: 'bidirectional',
  address: { room: 'general' },
};

/** One inbound message, the size of a short chat line. */
export function benchMessage(index: number): ChannelMessage {
  return {
    channelId: channel.id,
    messageId: `m${index}`,
    author: { id: 'u1', name: 'Ann Lee' },
    timestamp: '2026-09-14T11:42:52Z',
    content: [
      { type: 'text', text: '[2026-09-14T11:42:52+03:00 id=17206924] [#qa > router] Ann Lee: ship it' },
    ],
    tags: ['chat:ambient'],
  };
}

export const GRANT = ['tools', 'channels.register', 'channels.incoming'];

/**
 * The schema the SDK baseline hands its `Protocol` for params and results: any object, passed
 * through, as MCPL does for its own methods. The baseline then costs what the SDK costs, with no
 * schema library's parse on top.
 */
export const anyObject: StandardSchemaV1<Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'bench',
    validate: (value: unknown) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? { value: value as Record<string, unknown> }
        : { issues: [{ message: 'expected an object' }] },
  },
};

/** What an MCPL host answers to one `channels/incoming` batch: every message accepted. */
export function acceptAll(params: Record<string, unknown>): { results: Record<string, unknown>[] } {
  const messages = params.messages as { messageId: string }[];
  return { results: messages.map((m) => ({ messageId: m.messageId, accepted: true })) };
}

/** A server that, once ready, registers one channel and runs incoming rounds on request. */
export function benchServer(): {
  server: McplServer;
  run: (session: McplSession, rounds: number) => Promise<number>;
} {
  const run = async (session: McplSession, rounds: number) => {
    const started = performance.now();
    for (let i = 0; i < rounds; i += 1) {
      const [outcome] = await session.incoming([benchMessage(i)]);
      if (outcome?.status !== 'accepted') throw new Error(`round ${i}: ${outcome?.status}`);
    }
    return performance.now() - started;
  };
  const server = new McplServer({
    name: 'bench',
    version: '1.0.0',
    capabilities: { channels: { register: true, incoming: true } },
    featureSets: {
      'bench.channels': {
        description: 'Bench channel',
        uses: ['channels.register', 'channels.incoming', 'tools'],
      },
    },
    tools: {
      list: () => [{ name: 'run', inputSchema: { type: 'object' } }],
      call: async (params, context) => {
        const rounds = Number(params.arguments?.rounds ?? 0);
        const ms = await run(context.session, rounds);
        return { content: [{ type: 'text', text: JSON.stringify({ ms }) }] };
      },
    },
  });
  return { server, run };
}
