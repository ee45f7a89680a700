// Core's one error base: the brands an instance carries, instanceof by brand, the guard, and the
// one reading of an error's code.
import { describe, expect, it } from 'vitest';
import { CodedError, errorCode, isCodedError, isZmcpError, ZmcpError, ZulipApiError } from '../src/index.js';

class OuterError extends CodedError<'OUTER_A' | 'OUTER_B'> {
  static override readonly brand: string = '@example/outer.OuterError';
  override readonly name: string = 'OuterError';
}

class InnerError extends OuterError {
  static override readonly brand: string = '@example/outer.InnerError';
  override readonly name = 'InnerError';
}

/** A subclass that declares no brand of its own: it is known by its parent's. */
class Unbranded extends OuterError {}

describe('CodedError', () => {
  it('brands an instance with every class it is made from, and instanceof checks the class on the right', () => {
    const inner = new InnerError('OUTER_A', 'inner');
    for (const brand of ['@zmcp/core.CodedError', '@example/outer.OuterError', '@example/outer.InnerError']) {
      expect((inner as unknown as Record<symbol, unknown>)[Symbol.for(brand)]).toBe(true);
    }
    expect(inner).toBeInstanceOf(InnerError);
    expect(inner).toBeInstanceOf(OuterError);
    expect(inner).toBeInstanceOf(CodedError);
    expect(new OuterError('OUTER_A', 'outer')).not.toBeInstanceOf(InnerError);
    expect(new Unbranded('OUTER_B', 'plain')).toBeInstanceOf(OuterError);
    // Another package's errors are not this one's, though both are coded errors.
    expect(new ZmcpError('CORE_CLOSED', 'closed')).not.toBeInstanceOf(OuterError);
    expect(new ZmcpError('CORE_CLOSED', 'closed')).toBeInstanceOf(CodedError);
    expect(new InnerError('OUTER_A', 'x')).not.toBeInstanceOf(ZmcpError);
  });

  it('keeps a ZulipApiError a ZmcpError, and a ZmcpError not a ZulipApiError', () => {
    const api = new ZulipApiError('CORE_BAD_REQUEST', 'refused', { status: 400 });
    expect(api).toBeInstanceOf(ZmcpError);
    expect(isZmcpError(api, 'CORE_BAD_REQUEST')).toBe(true);
    expect(new ZmcpError('CORE_BAD_REQUEST', 'x')).not.toBeInstanceOf(ZulipApiError);
  });

  it('sets cause only when one is given, and carries details', () => {
    const cause = new Error('under');
    const err = new OuterError('OUTER_B', 'with', { cause, details: { n: 1 } });
    expect(err.cause).toBe(cause);
    expect(err.details).toEqual({ n: 1 });
    expect('cause' in new OuterError('OUTER_B', 'without')).toBe(false);
  });
});

describe('isCodedError', () => {
  it('matches the class by brand, and the codes when any are given', () => {
    const err = new OuterError('OUTER_A', 'a');
    expect(isCodedError(OuterError, err, [])).toBe(true);
    expect(isCodedError(OuterError, err, ['OUTER_A', 'OUTER_B'])).toBe(true);
    expect(isCodedError(OuterError, err, ['OUTER_B'])).toBe(false);
    expect(isCodedError(OuterError, Object.assign(new Error('look-alike'), { code: 'OUTER_A' }), [])).toBe(
      false,
    );
    expect(isCodedError(OuterError, 'OUTER_A', [])).toBe(false);
  });
});

describe('errorCode', () => {
  it('reads a string code from any thrown value, and nothing else', () => {
    expect(errorCode(new ZmcpError('CORE_TIMEOUT', 't'))).toBe('CORE_TIMEOUT');
    expect(errorCode(Object.assign(new Error('gone'), { code: 'ENOENT' }))).toBe('ENOENT');
    expect(errorCode({ code: 'PLAIN' })).toBe('PLAIN');
    expect(errorCode({ code: 42 })).toBeUndefined();
    expect(errorCode(new Error('none'))).toBeUndefined();
    expect(errorCode(null)).toBeUndefined();
    expect(errorCode(undefined)).toBeUndefined();
    expect(errorCode('CORE_TIMEOUT')).toBeUndefined();
  });
});
