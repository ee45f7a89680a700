import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalizeManifest, McplError, manifestRevision, sortSet } from '../src/index.js';

interface ManifestVector {
  name: string;
  input: unknown;
  canonicalJson?: string;
  sha256Hex?: string;
  digest?: string;
  expectError?: string;
  sameDigestAs?: string;
  differentDigestFrom?: string;
}

interface SortVector {
  name: string;
  input: string[];
  sorted: string[];
}

// Parsed from the file at run time: the vectors are data, never transcribed into code.
const file = JSON.parse(
  readFileSync(new URL('./conformance/manifest-digest-vectors.json', import.meta.url), 'utf8'),
) as { vectors: ManifestVector[]; sortVectors: SortVector[]; errorCodes: Record<string, string> };
const byName = new Map(file.vectors.map((vector) => [vector.name, vector]));

describe('§17.2 manifest digest vectors', () => {
  it('has vectors to check', () => {
    expect(file.vectors.length).toBeGreaterThan(20);
    expect(file.sortVectors.length).toBeGreaterThan(3);
  });

  for (const vector of file.vectors) {
    it(vector.name, () => {
      if (vector.expectError !== undefined) {
        expect(Object.keys(file.errorCodes)).toContain(vector.expectError);
        let thrown: unknown;
        try {
          manifestRevision(vector.input);
        } catch (err) {
          thrown = err;
        }
        expect(thrown).toBeInstanceOf(McplError);
        expect((thrown as McplError).code).toBe('MCPL_DIGEST_REFUSED');
        expect((thrown as McplError).details?.reason).toBe(vector.expectError);
        return;
      }
      const canonical = canonicalizeManifest(vector.input);
      expect(canonical).toBe(vector.canonicalJson);
      expect(createHash('sha256').update(canonical, 'utf8').digest('hex')).toBe(vector.sha256Hex);
      expect(manifestRevision(vector.input)).toBe(vector.digest);
      if (vector.sameDigestAs !== undefined) {
        const other = byName.get(vector.sameDigestAs);
        expect(other).toBeDefined();
        expect(manifestRevision(vector.input)).toBe(manifestRevision(other?.input));
      }
      if (vector.differentDigestFrom !== undefined) {
        const other = byName.get(vector.differentDigestFrom);
        expect(other).toBeDefined();
        expect(manifestRevision(vector.input)).not.toBe(manifestRevision(other?.input));
      }
    });
  }

  for (const vector of file.sortVectors) {
    it(`sort: ${vector.name}`, () => {
      expect(sortSet(vector.input)).toEqual(vector.sorted);
    });
  }
});
