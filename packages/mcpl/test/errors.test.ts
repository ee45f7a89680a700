import { readFileSync } from 'node:fs';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { capabilityDenied, McplError, McplRpcCode, rpcError } from '../src/index.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const errorsSource = readFileSync(new URL('../src/errors.ts', import.meta.url), 'utf8');
// Every code of the McplErrorCode union, read from its declaration.
const localCodes = [...errorsSource.matchAll(/^\s+\| '(MCPL_[A-Z_]+)'/gm)].map((m) => m[1] as string);

describe('error codes', () => {
  it('finds the local codes', () => {
    expect(localCodes.length).toBeGreaterThanOrEqual(14);
  });

  it.each(localCodes)('%s is documented in the README', (code) => {
    expect(readme).toContain(`| \`${code}\` |`);
  });

  it.each(Object.entries(McplRpcCode))('wire code %s (%i) is documented in the README', (_name, code) => {
    expect(readme).toContain(`| \`${code}\` |`);
  });

  it.each(localCodes)('McplError %s carries its code, name, details and cause', (code) => {
    const cause = new Error('under');
    const err = new McplError(code as never, 'message', { cause, details: { x: 1 } });
    expect(err.code).toBe(code);
    expect(err.name).toBe('McplError');
    expect(err.details).toEqual({ x: 1 });
    expect(err.cause).toBe(cause);
    expect(err).toBeInstanceOf(Error);
  });

  it('recognises an McplError by brand, across copies of the package', () => {
    const foreign = Object.assign(new Error('x'), { [Symbol.for('@zmcp/mcpl/McplError')]: true });
    expect(foreign).toBeInstanceOf(McplError);
    expect(new Error('plain')).not.toBeInstanceOf(McplError);
  });

  it('builds wire errors with Appendix A messages and data', () => {
    const denied = capabilityDenied('pushEvents');
    expect(denied).toBeInstanceOf(McpError);
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
