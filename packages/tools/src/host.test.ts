import { ZmcpError } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolError } from './errors.js';
import { ToolHost } from './host.js';
import { typedOutputSchema } from './listing.js';
import { type AnyToolDefinition, bindTool, defineTool, type ToolCallContext } from './tool.js';

// The call contract every host shares, exercised through a host with no transport at all.

type Behaviour = (input: { n: number }, context: ToolCallContext) => Promise<unknown>;

function probe(
  behaviour: Behaviour,
  options: { write?: boolean; idempotent?: boolean; name?: string; ownDeadlineMs?: number } = {},
) {
  const own = options.ownDeadlineMs;
  return defineTool({
    name: options.name ?? 'probe',
    title: 'Probe',
    description: 'A tool that does what the test says.',
    inputSchema: z.object({ n: z.number().int().describe('A number') }),
    outputSchema: z.object({ n: z.number().int() }),
    annotations: {
      readOnlyHint: !(options.write ?? false),
      destructiveHint: false,
      idempotentHint: options.idempotent ?? true,
      openWorldHint: true,
    },
    toolset: 'read',
    write: options.write ?? false,
    ...(own === undefined ? {} : { deadlineMs: () => own }),
    async handler(_services: null, input, context) {
      const n = (await behaviour(input, context)) as number;
      return { text: `n is ${n}`, data: { n } };
    },
  });
}

function host(
  behaviour: Behaviour,
  options: Parameters<typeof probe>[1] & { deadlineMs?: number; graceMs?: number } = {},
) {
  return new ToolHost([bindTool(probe(behaviour, options), null)], {
    deadlineMs: options.deadlineMs ?? 10_000,
    graceMs: options.graceMs ?? 20,
  });
}

const echo: Behaviour = async (input) => input.n;
const never = () => new Promise<never>(() => {});

describe('ToolHost', () => {
  it('answers { text, ...data } in one rendering', async () => {
    const out = await host(echo).call('probe', { n: 3 });
    expect(out).toEqual({ isError: false, text: 'n is 3', structured: { text: 'n is 3', n: 3 }, images: [] });
  });

  it('names the offending field of invalid input, and never runs the handler', async () => {
    let ran = false;
    const out = await host(async () => {
      ran = true;
      return 1;
    }).call('probe', { n: 'x' });
    expect(out).toMatchObject({ isError: true, code: 'TOOLS_INVALID_INPUT' });
    expect(out.text).toMatch(/^Invalid arguments: n: /);
    expect(ran).toBe(false);
  });

  it('refuses an unknown tool at the protocol level', async () => {
    await expect(host(echo).call('nope', {})).rejects.toMatchObject({ code: 'TOOLS_UNKNOWN_TOOL' });
  });

  it('ends a call at the shared deadline, even when the handler ignores its signal', async () => {
    const out = await host(never, { deadlineMs: 10 }).call('probe', { n: 1 });
    expect(out).toMatchObject({ isError: true, code: 'TOOLS_DEADLINE' });
  });

  it("uses a tool's own deadline in place of the shared one", async () => {
    const out = await host(never, { deadlineMs: 60_000, ownDeadlineMs: 5 }).call('probe', { n: 7 });
    expect(out).toMatchObject({ isError: true, code: 'TOOLS_DEADLINE' });
  });

  it('tells a cancellation from a deadline', async () => {
    const controller = new AbortController();
    const pending = host(never).call('probe', { n: 1 }, { signal: controller.signal });
    controller.abort();
    expect(await pending).toMatchObject({ isError: true, code: 'TOOLS_CANCELLED' });
  });

  it('lets a handler that honours its signal answer with its own coded failure', async () => {
    const out = await host(
      (_input, { signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () =>
            reject(new ZmcpError('CORE_TIMEOUT', 'Zulip did not answer.')),
          );
        }),
      { deadlineMs: 10 },
    ).call('probe', { n: 1 });
    expect(out).toMatchObject({ isError: true, code: 'CORE_TIMEOUT' });
  });

  it('checks the result against the output schema', async () => {
    const out = await host(async () => 1.5).call('probe', { n: 1 });
    expect(out).toMatchObject({
      isError: true,
      code: 'TOOLS_INTERNAL',
      text: expect.stringContaining('malformed'),
    });
  });

  it('passes known codes with their hint, and nothing else of an unknown error', async () => {
    const denied = await host(async () => {
      throw new ZmcpError('CORE_ACCESS_DENIED', 'Reading stream 12 is not allowed.');
    }).call('probe', { n: 1 });
    expect(denied).toMatchObject({ isError: true, code: 'CORE_ACCESS_DENIED' });
    expect(denied.text).toContain('Hint: This server is configured not to read or write there');
    const errno = await host(async () => {
      throw Object.assign(new Error("EACCES: permission denied, open '/home/op/.zmcp/state.json'"), {
        code: 'EACCES',
      });
    }).call('probe', { n: 1 });
    expect(errno).toMatchObject({ isError: true, code: 'TOOLS_INTERNAL' });
    expect(errno.text).not.toContain('/home/op');
  });

  it('never hands the model a host path from a known code', async () => {
    const out = await host(async () => {
      throw Object.assign(new Error('could not write /srv/zmcp/state/agent.monitor.json: EACCES'), {
        code: 'DELIVERY_IO_FAILED',
      });
    }).call('probe', { n: 1 });
    expect(out).toMatchObject({ isError: true, code: 'DELIVERY_IO_FAILED' });
    expect(out.text).not.toContain('/srv');
    const locked = await host(async () => {
      throw Object.assign(
        new Error(
          'another server (pid 4242, since 2026-12-02) delivers for this session (lock /srv/zmcp/state/agent.delivery.lock)',
        ),
        { code: 'DELIVERY_STATE_LOCKED' },
      );
    }).call('probe', { n: 1 });
    expect(locked).toMatchObject({ isError: true, code: 'DELIVERY_STATE_LOCKED' });
    expect(locked.text).not.toContain('/srv');
    expect(locked.text).toContain('Another server delivers live');
  });

  it('tells the model to check before retrying a write that may have happened', async () => {
    const timeout = async () => {
      throw new ZmcpError('CORE_TIMEOUT', 'Zulip did not answer within 15000 ms.');
    };
    const send = await host(timeout, { write: true, idempotent: false }).call('probe', { n: 1 });
    expect(send.text).toContain('may or may not have been made');
    const read = await host(timeout).call('probe', { n: 1 });
    expect(read.text).toContain('try again');
  });

  it('hands over every progress update, in order, before the result', async () => {
    const seen: string[] = [];
    const out = await host(async (input, { progress }) => {
      for (let i = 1; i <= 3; i++) progress({ progress: i, total: 3 });
      return input.n;
    }).call(
      'probe',
      { n: 2 },
      {
        progress: async (update) => {
          await Promise.resolve();
          seen.push(`p${update.progress}`);
        },
      },
    );
    seen.push(out.isError ? 'error' : 'result');
    expect(seen).toEqual(['p1', 'p2', 'p3', 'result']);
  });

  it('runs a retried write request once, and refuses an id reused for other arguments', async () => {
    let runs = 0;
    const h = host(
      async (input) => {
        runs++;
        return input.n;
      },
      { write: true, idempotent: false },
    );
    const first = await h.call('probe', { n: 4 }, { requestId: 9 });
    const again = await h.call('probe', { n: 4 }, { requestId: 9 });
    expect(again).toEqual(first);
    expect(runs).toBe(1);
    await expect(h.call('probe', { n: 5 }, { requestId: 9 })).rejects.toMatchObject({
      code: 'TOOLS_REQUEST_ID_REUSED',
    });
    // `9` and `"9"` are different ids.
    await h.call('probe', { n: 5 }, { requestId: '9' });
    expect(runs).toBe(2);
  });

  it('refuses a catalog with a duplicate or malformed name', () => {
    const a = bindTool(probe(echo), null);
    expect(() => new ToolHost([a, a], { deadlineMs: 1 })).toThrow(ToolError);
    expect(
      () => new ToolHost([bindTool(probe(echo, { name: 'bad name' }), null)], { deadlineMs: 1 }),
    ).toThrow(/not valid/);
  });

  it('lists each tool with the one shared result schema, and types its fields apart', () => {
    const h = host(echo);
    const [listing] = h.listing();
    expect(listing?.outputSchema).toEqual({
      $id: 'urn:zmcp:tool-result:1',
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(typedOutputSchema(h.definitions[0] as AnyToolDefinition)).toMatchObject({
      properties: { text: { type: 'string' }, n: { type: 'integer' } },
      required: ['text', 'n'],
    });
    expect(listing?.inputSchema).not.toHaveProperty('$schema');
  });
});

describe('ToolError', () => {
  it('is recognised across package copies by its brand', () => {
    const foreign = Object.assign(Object.create(Error.prototype), {
      [Symbol.for('@zmcp/tools.ToolError')]: true,
      code: 'TOOLS_NOT_FOUND',
    });
    expect(foreign instanceof ToolError).toBe(true);
    expect(new Error('x') instanceof ToolError).toBe(false);
    expect(new ToolError('TOOLS_NOT_FOUND', 'x') instanceof ToolError).toBe(true);
  });
});
