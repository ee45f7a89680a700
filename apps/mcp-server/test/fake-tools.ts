// Small tools standing in for the real catalog: the server registers any catalog, so
// its tests use tools whose behaviour they control.
import { type BoundTool, bindTool, defineTool, toolFailure } from '@zmcp/tools';
import { z } from 'zod';

/** A promise plus the function that resolves it: a barrier a test and a tool meet at. */
export function barrier<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves when `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export const echoTool = bindTool(
  defineTool({
    name: 'echo',
    title: 'Echo',
    description: 'Returns its text, repeated.',
    inputSchema: z.object({
      text: z.string().describe('What to echo.'),
      times: z.number().int().min(1).max(5).optional().describe('How many times; default 1.'),
    }),
    outputSchema: z.object({ echoed: z.string() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    async handler(_services: null, input) {
      const echoed = input.text.repeat(input.times ?? 1);
      return { text: echoed, data: { echoed } };
    },
  }),
  null,
);

/** A writer that counts what it posted: the proof a retried call did not post twice. */
export function makePostTool(): { tool: BoundTool; posts: { stream: string; content: string }[] } {
  const posts: { stream: string; content: string }[] = [];
  const tool = defineTool({
    name: 'post_message',
    title: 'Post a message',
    description: 'Posts a message to a stream.',
    inputSchema: z.object({
      stream: z.string().min(1).describe('Stream name.'),
      content: z.string().min(1).describe('Message body.'),
    }),
    outputSchema: z.object({ id: z.number().int() }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    toolset: 'read',
    write: true,
    async handler(_services: null, input) {
      posts.push(input);
      const id = 1000 + posts.length;
      return { text: JSON.stringify({ id }), data: { id } };
    },
  });
  return { tool: bindTool(tool, null), posts };
}

/** Refuses with a coded error, the way core reports an access-policy refusal. */
export const deniedTool = bindTool(
  defineTool({
    name: 'read_private',
    title: 'Read a private stream',
    description: 'Always refused by the access policy.',
    inputSchema: z.object({}),
    outputSchema: z.object({}),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    toolset: 'read',
    write: false,
    async handler(_services: null) {
      throw Object.assign(new Error('Reading stream "secret" is not allowed.'), {
        code: 'CORE_ACCESS_DENIED',
      });
    },
  }),
  null,
);

/** Returns a failure of its own, with a hint. */
export const refusingTool = bindTool(
  defineTool({
    name: 'refuse',
    title: 'Refuse',
    description: 'Always declines.',
    inputSchema: z.object({}),
    outputSchema: z.object({}),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    async handler(_services: null) {
      return toolFailure('TOOLS_NOT_NOW', 'Nothing to do.', 'Call again later.');
    },
  }),
  null,
);

/** Claims an output schema and breaks it. */
export const malformedTool = bindTool(
  defineTool({
    name: 'malformed',
    title: 'Malformed',
    description: 'Returns structured content that does not match its output schema.',
    inputSchema: z.object({}),
    outputSchema: z.object({ count: z.number() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    async handler(_services: null) {
      return { text: 'oops', data: { count: 'many' } as unknown as { count: number } };
    },
  }),
  null,
);

/**
 * A long tool: reports progress, then waits at `gate` (or for its signal, which it
 * honours) before answering. `started` resolves with the signal once it runs.
 */
export function makeSlowTool(): {
  tool: BoundTool;
  started: Promise<AbortSignal>;
  gate: { promise: Promise<void>; resolve: () => void };
} {
  const started = barrier<AbortSignal>();
  const gate = barrier<void>();
  const tool = defineTool({
    name: 'slow',
    title: 'Slow',
    description: 'Takes a while and reports progress.',
    inputSchema: z.object({}),
    outputSchema: z.object({ done: z.boolean() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    async handler(_services: null, _input, { signal, progress }) {
      started.resolve(signal);
      progress({ progress: 1, total: 2, message: 'halfway' });
      await Promise.race([gate.promise, aborted(signal)]);
      signal.throwIfAborted();
      progress({ progress: 2, total: 2, message: 'done' });
      return { text: 'done', data: { done: true } };
    },
  });
  return { tool: bindTool(tool, null), started: started.promise, gate };
}

/** Ignores its signal and never answers: only the deadline's grace can end the call. */
export const stubbornTool = bindTool(
  defineTool({
    name: 'stubborn',
    title: 'Stubborn',
    description: 'Never returns.',
    inputSchema: z.object({}),
    outputSchema: z.object({}),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    handler: (_services: null) => new Promise<never>(() => {}),
  }),
  null,
);
