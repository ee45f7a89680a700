import { ZmcpError } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, runTool } from './run.js';

function tool(idempotent: boolean, fail: () => never) {
  return defineTool({
    name: 'probe',
    title: 'Probe',
    description: 'A tool that fails on purpose.',
    inputSchema: z.object({ n: z.number().int().describe('A number') }),
    outputSchema: z.object({}),
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: idempotent,
      openWorldHint: true,
    },
    write: true,
    handler: async () => fail(),
  });
}

const context = () => ({ signal: new AbortController().signal, progress: () => {} });

describe('runTool', () => {
  it('names the offending field of invalid input', async () => {
    const result = await runTool(
      tool(true, () => {
        throw new Error('unreachable');
      }),
      { n: 'x' },
      context(),
    );
    expect(result).toMatchObject({ isError: true, code: 'TOOLS_INVALID_INPUT' });
    expect(result.isError && result.text).toMatch(/^Invalid arguments: n: /);
  });

  it('passes a coded error through with the hint for its code', async () => {
    const denied = () => {
      throw new ZmcpError('CORE_ACCESS_DENIED', 'Reading stream "ops" is not allowed.');
    };
    const result = await runTool(tool(true, denied), { n: 1 }, context());
    expect(result).toMatchObject({ isError: true, code: 'CORE_ACCESS_DENIED' });
    expect(result.isError && result.text).toContain(
      'Hint: This server is configured not to read or write there',
    );
  });

  it('tells the model to check before retrying a timed-out tool that is not idempotent', async () => {
    const timeout = () => {
      throw new ZmcpError('CORE_TIMEOUT', 'Zulip did not answer within 15000 ms.');
    };
    const send = await runTool(tool(false, timeout), { n: 1 }, context());
    expect(send.isError && send.text).toContain('may or may not have been made');
    const read = await runTool(tool(true, timeout), { n: 1 }, context());
    expect(read.isError && read.text).toContain('try again');
  });

  it('reports an uncoded throw without its message', async () => {
    const boom = () => {
      throw new Error('secret internals');
    };
    const result = await runTool(tool(true, boom), { n: 1 }, context());
    expect(result).toMatchObject({ isError: true, code: 'TOOLS_INTERNAL' });
    expect(result.isError && result.text).not.toContain('secret internals');
  });
});
