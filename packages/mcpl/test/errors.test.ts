// The wire errors (SPEC Appendix A). McplError itself, its codes and their README rows are
// checked with every package's error class in the root test/errors.test.ts.
import { readFileSync } from 'node:fs';
import { ProtocolError } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { capabilityDenied, McplRpcCode, rpcError } from '../src/index.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('wire errors', () => {
  it.each(Object.entries(McplRpcCode))('wire code %s (%i) is documented in the README', (_name, code) => {
    expect(readme).toContain(`| \`${code}\` |`);
  });

  it('builds wire errors with Appendix A messages and data', () => {
    const denied = capabilityDenied('pushEvents');
    expect(denied).toBeInstanceOf(ProtocolError);
    expect([denied.code, denied.message, denied.data]).toEqual([
      -32002,
      'Capability denied',
      { capability: 'pushEvents' },
    ]);
    const missing = rpcError(McplRpcCode.CheckpointNotFound, undefined, { checkpoint: 'c' });
    expect([missing.code, missing.message]).toEqual([-32005, 'Checkpoint not found']);
    expect(rpcError(-32023).message).toBe('Unknown channel');
    expect(rpcError(-32602, 'bad thing').message).toBe('bad thing');
  });
});
