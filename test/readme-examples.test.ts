// Every package whose README has ts examples runs them from its own test/readme.test.ts, through
// the one helper (test/support/readme.ts), so none keeps a copy of an example.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readmeExamples } from './support/readme.js';

const root = join(import.meta.dirname, '..');
const dirs = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(root, group))
    .map((name) => join(group, name))
    .filter((dir) => existsSync(join(root, dir, 'package.json'))),
);

describe.each(dirs)('%s', (dir) => {
  it('has a README with a ts example, run by test/readme.test.ts through the shared helper', () => {
    expect(readmeExamples(join(root, dir)).length).toBeGreaterThan(0);
    const test = join(root, dir, 'test', 'readme.test.ts');
    expect(existsSync(test)).toBe(true);
    expect(readFileSync(test, 'utf8')).toContain('testReadmeExamples(');
  });
});
