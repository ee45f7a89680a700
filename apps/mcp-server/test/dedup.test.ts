// Request de-duplication, driven with hand-written JSON-RPC: the SDK Client never reuses
// an id, and a retry is exactly a reused id.
import { ProtocolErrorCode } from '@modelcontextprotocol/client';
import type { BoundTool } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { echoTool, makePostTool } from './fake-tools.js';
import { RawSession, type Via } from './raw-session.js';

afterEach(() => RawSession.closeAll());

describe.each<Via>(['in memory', 'on stdio, 2025', 'on stdio, 2026'])('request de-duplication %s', (via) => {
  it('answers a retried write with the first result and posts once', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    const args = { stream: 'general', content: 'deploy done' };

    // The same request twice, the second while the first is still in flight.
    session.call(7, 'post_message', args);
    session.call(7, 'post_message', args);
    const [first, second] = await session.responsesTo(7, 2);
    expect(posts).toHaveLength(1);
    expect(second).toEqual(first);
    expect(first).toMatchObject({ result: { structuredContent: { id: 1001 } } });

    // And once more after it was answered.
    session.call(7, 'post_message', args);
    const all = await session.responsesTo(7, 3);
    expect(all[2]).toEqual(first);
    expect(posts).toHaveLength(1);
  });

  it('runs a write again under a different id, and keeps number 1 apart from string "1"', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    const args = { stream: 'general', content: 'hello' };
    session.call(1, 'post_message', args);
    await session.responsesTo(1, 1);
    session.call('1', 'post_message', args);
    await session.responsesTo('1', 1);
    session.call(2, 'post_message', args);
    const [third] = await session.responsesTo(2, 1);
    expect(posts).toHaveLength(3);
    expect(third).toMatchObject({ result: { structuredContent: { id: 1003 } } });
  });

  it('gives a new session a fresh scope', async () => {
    const { tool, posts } = makePostTool();
    const args = { stream: 'general', content: 'hello' };
    const first = await RawSession.open([tool], via);
    first.call(1, 'post_message', args);
    await first.responsesTo(1, 1);
    const second = await RawSession.open([tool], via);
    second.call(1, 'post_message', args);
    const [answer] = await second.responsesTo(1, 1);
    expect(posts).toHaveLength(2);
    expect(answer).toMatchObject({ result: { structuredContent: { id: 1002 } } });
  });

  it('refuses an id reused for a different call as a protocol error', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    session.call(5, 'post_message', { stream: 'general', content: 'one' });
    await session.responsesTo(5, 1);
    session.call(5, 'post_message', { stream: 'general', content: 'two' });
    const [, reused] = await session.responsesTo(5, 2);
    expect(reused).toMatchObject({ error: { code: ProtocolErrorCode.InvalidRequest } });
    expect(posts.map((p) => p.content)).toEqual(['one']);
  });

  it('does not remember reads: a reused id runs a read tool again', async () => {
    let runs = 0;
    const counting: BoundTool = {
      definition: echoTool.definition,
      async run(input, context) {
        runs++;
        return echoTool.run(input, context);
      },
    };
    const session = await RawSession.open([counting], via);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 1);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 2);
    expect(runs).toBe(2);
  });
});
