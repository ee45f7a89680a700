import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { HookContext } from '../src/index.js';
import { createToyServer } from './fixtures/toy.js';
import { connectPair, FULL_GRANT } from './helpers.js';

const inference = { inferenceId: 'i1', conversationId: 'c', turnIndex: 0, userMessage: 'hi' };

/** A server whose beforeInference hook waits until its signal fires, and the context it was handed. */
async function waitingHook() {
  let entered: (context: HookContext) => void = () => {};
  const inHook = new Promise<HookContext>((resolve) => {
    entered = resolve;
  });
  const toy = createToyServer({
    beforeInference: async (_params, context) => {
      entered(context);
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
      return undefined;
    },
  });
  const { host, session } = await connectPair(toy.server);
  await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
  await session.whenReady();
  return { host, inHook };
}

describe('the signal a hook is handed', () => {
  it('fires when the connection closes while the hook runs', async () => {
    const { host, inHook } = await waitingHook();
    const pending = host.beforeInference(inference).catch((err: unknown) => err);
    const context = await inHook;
    expect(context.signal.aborted).toBe(false);
    await host.close();
    await pending;
    expect(context.signal.aborted).toBe(true);
  });

  it('fires when the host cancels the request', async () => {
    const { host, inHook } = await waitingHook();
    const cancel = new AbortController();
    const pending = host.client
      .request({ method: 'context/beforeInference', params: inference }, z.looseObject({}), {
        signal: cancel.signal,
      })
      .catch((err: unknown) => err);
    const context = await inHook;
    cancel.abort('changed my mind');
    await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    expect(context.signal.reason).toBe('changed my mind');
    await pending;
    await host.close();
  });

  it('is let go once its request is answered: a long connection keeps nothing per request', async () => {
    const script = fileURLToPath(new URL('./fixtures/request-leak.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--expose-gc',
      '--import',
      'tsx',
      '--conditions',
      '@zmcp/source',
      script,
    ]);
    const { bytesPerRequest } = JSON.parse(stdout) as { bytesPerRequest: number };
    // Linking each request to the connection's signal with AbortSignal.any kept about 2 KB each.
    expect(bytesPerRequest).toBeLessThan(200);
  });
});
