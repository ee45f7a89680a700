// stdout carries only protocol: a real server process is driven over stdio, every byte it
// writes to stdout is kept, and each line must be one JSON-RPC 2.0 message. Logs, including
// those provoked by a garbage line, must land on stderr.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McplHost, spawnStdioTransport } from '../src/index.js';
import { FULL_GRANT } from './helpers.js';

const toyProcess = fileURLToPath(new URL('./fixtures/toy-process.ts', import.meta.url));

/** The lines of `text` that are not a JSON-RPC 2.0 message (a final partial line counts too). */
function protocolViolations(text: string): string[] {
  const lines = text.split('\n');
  const last = lines.pop();
  const bad = last === '' || last === undefined ? [] : [last];
  for (const line of lines) {
    try {
      const message = JSON.parse(line) as Record<string, unknown>;
      const shaped =
        message.jsonrpc === '2.0' && ('method' in message || 'result' in message || 'error' in message);
      if (!shaped) bad.push(line);
    } catch {
      bad.push(line);
    }
  }
  return bad;
}

describe('stdout', () => {
  it('the checker catches anything that is not protocol', () => {
    expect(protocolViolations('{"jsonrpc":"2.0","id":1,"result":{}}\nlistening on 3000\n')).toEqual([
      'listening on 3000',
    ]);
    expect(protocolViolations('{"jsonrpc":"2.0","method":"x"}\n{"jsonrpc":"2.0"')).toEqual([
      '{"jsonrpc":"2.0"',
    ]);
    expect(protocolViolations('{"foo":1}\n')).toEqual(['{"foo":1}']);
  });

  it('a server process writes nothing but JSON-RPC to stdout', async () => {
    const transport = await spawnStdioTransport({
      command: process.execPath,
      args: ['--import', 'tsx', toyProcess],
      stderr: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    transport.child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    transport.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const host = await McplHost.connect(transport, { name: 'stdout-test', version: '1' });
    const incoming = new Promise<string[]>((resolve) => {
      host.on('incoming', (messages) => resolve(messages.map((m) => m.messageId)));
    });
    expect(host.manifest?.version).toBe('0.5');
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    expect(await incoming).toEqual(['live-1']);
    // Provoke the server's logging: a garbage line and an unknown method.
    transport.child.stdin?.write('not json at all\n');
    await expect(host.client.request({ method: 'no/such' }, z.looseObject({}))).rejects.toMatchObject({
      code: -32601,
    });
    expect((await host.callTool('ping')).content).toEqual([{ type: 'text', text: 'pong' }]);
    const sent = await host.callTool('send', { text: 'hi' });
    expect(sent.state?.checkpoint).toMatch(/^chk_/);
    await host.close();
    await transport.exited;
    expect(stdout.length).toBeGreaterThan(0);
    expect(protocolViolations(stdout)).toEqual([]);
    expect(stderr).toContain('dropped a line that is not JSON');
  });
});
