import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isCliError } from './errors.js';
import { expandHome, homeDirectory } from './paths.js';
import { quoteForError } from './quote.js';
import { readmeTable, writeReadmeTable } from './readme.js';
import { readPackageVersion } from './version.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zmcp-cli-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeReadmeTable', () => {
  it('replaces what sits between the markers, and leaves the rest alone', async () => {
    const path = join(dir, 'README.md');
    await writeFile(path, '# x\n\n<!-- settings:start -->\nold\n<!-- settings:end -->\n\nafter\n');
    writeReadmeTable(path, '| a |\n|---|');
    const text = await readFile(path, 'utf8');
    expect(text).toBe('# x\n\n<!-- settings:start -->\n| a |\n|---|\n<!-- settings:end -->\n\nafter\n');
    expect(readmeTable(text)).toBe('| a |\n|---|');
    writeReadmeTable(path, '| a |\n|---|');
    expect(await readFile(path, 'utf8')).toBe(text);
  });

  it('refuses a README without the markers, in order, and writes nothing', async () => {
    const path = join(dir, 'README.md');
    for (const text of ['# no markers\n', '<!-- settings:end -->\n<!-- settings:start -->\n']) {
      await writeFile(path, text);
      let caught: unknown;
      try {
        writeReadmeTable(path, 'table');
      } catch (err) {
        caught = err;
      }
      expect(isCliError(caught, 'CLI_README_MARKERS_MISSING')).toBe(true);
      expect(await readFile(path, 'utf8')).toBe(text);
      expect(readmeTable(text)).toBeUndefined();
    }
  });
});

describe('readPackageVersion', () => {
  it('reads the version once, and 0.0.0 when there is none', async () => {
    const manifest = join(dir, 'package.json');
    await writeFile(manifest, JSON.stringify({ name: 'x', version: '1.2.3' }));
    expect(readPackageVersion(pathToFileURL(manifest))).toBe('1.2.3');
    await writeFile(manifest, JSON.stringify({ name: 'x', version: '9.9.9' }));
    expect(readPackageVersion(pathToFileURL(manifest))).toBe('1.2.3');
    const bare = join(dir, 'bare.json');
    await writeFile(bare, JSON.stringify({ name: 'x' }));
    expect(readPackageVersion(pathToFileURL(bare))).toBe('0.0.0');
  });
});

describe('paths', () => {
  it('expands ~ and ~/ only', () => {
    expect(expandHome('~', '/home/a')).toBe('/home/a');
    expect(expandHome('~/x/y', '/home/a')).toBe('/home/a/x/y');
    expect(expandHome('~b/x', '/home/a')).toBe('~b/x');
    expect(expandHome('/abs', '/home/a')).toBe('/abs');
  });

  it('takes HOME from the bin’s environment, else the OS’s', () => {
    expect(homeDirectory({ HOME: '/home/b' })).toBe('/home/b');
    expect(homeDirectory({ HOME: '' })).toBe(homedir());
    expect(homeDirectory({})).toBe(homedir());
  });
});

describe('quoteForError', () => {
  it('quotes, blanks secrets and URL user-info, and cuts at 60 characters', () => {
    expect(quoteForError('a "b"')).toBe('"a \\"b\\""');
    expect(quoteForError('x secret-value y', ['secret-value'])).toBe('"x [REDACTED] y"');
    expect(quoteForError('http://u:p@h/ and https://t@h2/')).toBe(
      '"http://[REDACTED]@h/ and https://[REDACTED]@h2/"',
    );
    expect(quoteForError('z'.repeat(61))).toBe(`"${'z'.repeat(57)}..."`);
    expect(quoteForError('z'.repeat(60))).toBe(`"${'z'.repeat(60)}"`);
  });
});
