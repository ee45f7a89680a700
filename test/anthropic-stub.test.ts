// The Messages API stub the real-CLI end-to-end tests (`pnpm test:e2e`) run Claude Code against:
// its wire format, its script, what it records, and its refusing proxy. Fast, no CLI needed.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnthropicStub, requestShape, startAnthropicStub } from './support/anthropic-stub.js';

let stub: AnthropicStub | undefined;

afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

const body = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-test',
  max_tokens: 1000,
  tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  ...extra,
});

function post(url: string, path: string, value: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(value),
  });
}

/** The events of an SSE body, in order, as `event:` name and parsed `data:`. */
function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))?.slice(6) ?? 'null');
      return { event, data };
    });
}

describe('the Messages API stub', () => {
  it('streams a scripted turn as the API does: text deltas, then a tool_use whose input arrives in pieces', async () => {
    const input = { query: 'a somewhat long query string, so that it is cut into several pieces' };
    stub = await startAnthropicStub({
      script: [
        () => ({
          text: 'Let me look that up for you, it takes a moment.',
          toolCalls: [{ name: 'lookup', input }],
        }),
      ],
    });
    const res = await post(stub.url, '/v1/messages?beta=true', body({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const seen = events(await res.text());
    // Every data object carries its own event name as `type`.
    for (const e of seen) expect(e.data.type).toBe(e.event);
    expect(seen.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...seen
        .filter((e) => e.event === 'content_block_delta' && e.data.index === 0)
        .map(() => 'content_block_delta'),
      'content_block_stop',
      'content_block_start',
      ...seen
        .filter((e) => e.event === 'content_block_delta' && e.data.index === 1)
        .map(() => 'content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const start = seen[0]?.data.message as Record<string, unknown>;
    expect(start).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
      stop_reason: null,
    });
    expect(String(start.id)).toMatch(/^msg_01[A-Za-z0-9]{22}$/);
    const deltas = (index: number) =>
      seen
        .filter((e) => e.event === 'content_block_delta' && e.data.index === index)
        .map((e) => e.data.delta as Record<string, string>);
    expect(deltas(0).map((d) => d.type)).not.toContain('input_json_delta');
    expect(
      deltas(0)
        .map((d) => d.text)
        .join(''),
    ).toBe('Let me look that up for you, it takes a moment.');
    const toolStart = seen.find((e) => e.event === 'content_block_start' && e.data.index === 1)?.data
      .content_block as Record<string, unknown>;
    expect(toolStart).toMatchObject({ type: 'tool_use', name: 'lookup', input: {} });
    expect(String(toolStart.id)).toMatch(/^toolu_01[A-Za-z0-9]{22}$/);
    expect(deltas(1).length).toBeGreaterThan(2);
    expect(
      JSON.parse(
        deltas(1)
          .map((d) => d.partial_json)
          .join(''),
      ),
    ).toEqual(input);
    expect(seen.find((e) => e.event === 'message_delta')?.data.delta).toEqual({
      stop_reason: 'tool_use',
      stop_sequence: null,
    });
    await stub.finished;
  });

  it('answers without streaming as one message, and serves count_tokens', async () => {
    stub = await startAnthropicStub({ script: [() => ({ text: 'Done.' })] });
    const res = await post(stub.url, '/v1/messages', body());
    expect(await res.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [{ type: 'text', text: 'Done.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    const counted = (await (await post(stub.url, '/v1/messages/count_tokens', body())).json()) as {
      input_tokens: number;
    };
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(stub.problems).toEqual([]);
  });

  it('is driven turn by turn, hands the model what the client sent back, and answers side queries apart', async () => {
    stub = await startAnthropicStub({});
    const first = post(stub.url, '/v1/messages', body());
    const r0 = await stub.next();
    expect(r0.turn).toBe(0);
    const next = r0.answer({ toolCalls: [{ name: 'lookup', input: { q: 1 }, id: 'toolu_fixed' }] });
    const answer = (await (await first).json()) as { content: { id: string }[] };
    expect(answer.content[0]?.id).toBe('toolu_fixed');

    // A side query (no tools) is answered without taking a turn.
    const side = await post(stub.url, '/v1/messages', { ...body(), tools: undefined });
    expect(((await side.json()) as { content: unknown[] }).content).toEqual([{ type: 'text', text: 'OK.' }]);

    const second = post(
      stub.url,
      '/v1/messages',
      body({
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_fixed', name: 'lookup', input: { q: 1 } }],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_fixed', content: '{"text":"found","n":1}' }],
          },
        ],
      }),
    );
    const r1 = await next;
    expect(r1.turn).toBe(1);
    expect(r1.result('lookup')).toMatchObject({
      name: 'lookup',
      text: '{"text":"found","n":1}',
      isError: false,
    });
    expect(() => r1.result('other')).toThrow(/not handed a result of other/);
    void r1.answer({ text: 'bye' });
    await second;
    expect(stub.turns).toHaveLength(2);
    expect(stub.requests.map((q) => q.turn)).toEqual([0, undefined, 1]);
  });

  it('records what it cannot serve: an unknown path, a bad body, a turn past the script', async () => {
    stub = await startAnthropicStub({ script: [() => ({ text: 'one' })] });
    const missing = await post(stub.url, '/v1/files', {});
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect((await post(stub.url, '/v1/messages', { nope: true })).status).toBe(400);
    await post(stub.url, '/v1/messages', body());
    const past = await post(stub.url, '/v1/messages', body());
    // Not worth retrying: Claude Code would otherwise back off ten times before it gives up.
    expect(past.status).toBe(400);
    expect(past.headers.get('x-should-retry')).toBe('false');
    expect(stub.problems).toEqual([
      'request 0: POST /v1/files is not served',
      'request 1: not a Messages API body',
      "request 3: main turn 1 is past the script's 1",
    ]);
  });

  it('refuses and records every attempt to go through it to another host', async () => {
    stub = await startAnthropicStub({});
    const { port } = new URL(stub.url);
    const tunnel = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write('CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n');
      });
      let got = '';
      socket.on('data', (d) => {
        got += d.toString();
      });
      socket.on('close', () => resolve(got));
    });
    expect(tunnel).toMatch(/^HTTP\/1\.1 403/);
    const plain = await new Promise<number | undefined>((resolve) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: Number(port), path: 'http://example.com/x', method: 'GET' },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.end();
    });
    expect(plain).toBe(403);
    expect(stub.outbound).toEqual(['CONNECT api.anthropic.com:443', 'GET http://example.com/x']);
  });

  it('gives the shape of a request, without the texts and ids that vary', async () => {
    stub = await startAnthropicStub({ script: [() => ({ text: 'ok' })] });
    await post(
      stub.url,
      '/v1/messages',
      body({ system: [{ type: 'text', text: 'You are a test.\nMore.' }] }),
    );
    const shape = requestShape(stub.requests[0] as NonNullable<(typeof stub.requests)[0]>);
    expect(shape.body).toMatchObject({
      model: 'claude-test',
      tools: ['lookup'],
      system: [{ firstLine: 'You are a test.' }],
      messages: [{ role: 'user', blocks: ['text'] }],
    });
    expect(shape.headers['anthropic-version']).toBe('2023-06-01');
  });
});
