import { execFileSync } from 'node:child_process';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ConfinedFile,
  isUploadError,
  parseUploadRoots,
  type UploadErrorCode,
  UploadRoots,
} from '../src/index.js';
import { tempDir } from './helpers.js';

async function refusal(
  promise: Promise<unknown>,
  code: UploadErrorCode,
): Promise<Error & { details?: unknown }> {
  try {
    const value = await promise;
    if (value && typeof (value as ConfinedFile).close === 'function') await (value as ConfinedFile).close();
  } catch (err) {
    if (!isUploadError(err, code)) throw err;
    return err;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

async function readAll(file: ConfinedFile, maxBytes = 1 << 20): Promise<string> {
  const parts: Buffer[] = [];
  try {
    for await (const chunk of file.chunks({ maxBytes })) parts.push(Buffer.from(chunk));
  } finally {
    await file.close();
  }
  return Buffer.concat(parts).toString();
}

describe('parseUploadRoots', () => {
  it('parses name=path pairs, resolving relative paths against cwd', () => {
    expect(parseUploadRoots('notes=./notes, out=/srv/agent/out ,w-2_x=a=b', '/home/agent')).toEqual([
      { name: 'notes', path: '/home/agent/notes' },
      { name: 'out', path: '/srv/agent/out' },
      { name: 'w-2_x', path: '/home/agent/a=b' },
    ]);
  });

  it('treats unset or blank as no roots', () => {
    expect(parseUploadRoots(undefined, '/')).toEqual([]);
    expect(parseUploadRoots('  ', '/')).toEqual([]);
  });

  it.each([
    ['notes', /not name=path/],
    ['=./notes', /root name ""/],
    ['my notes=./n', /letters, digits/],
    ['../x=./n', /letters, digits/],
    ['notes=', /empty path/],
    ['notes=./a,notes=./b', /given twice/],
    ['notes=./a,,out=./b', /empty entry/],
    ['notes=./a,', /empty entry/],
  ])('refuses %j', (value, message) => {
    let caught: unknown;
    try {
      parseUploadRoots(value, '/work');
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_CONFIG_INVALID')).toBe(true);
    expect((caught as Error).message).toMatch(message);
    expect((caught as { details: { variable: string } }).details.variable).toBe('ZULIP_UPLOAD_ROOTS');
  });
});

describe('UploadRoots', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let roots: UploadRoots;

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    // dir/notes          the root
    // dir/notes-evil     a sibling sharing the root's name as a prefix
    // dir/outside        anything else on the host
    await mkdir(join(dir, 'notes', 'sub'), { recursive: true });
    await mkdir(join(dir, 'notes-evil'));
    await mkdir(join(dir, 'outside'));
    await mkdir(join(dir, 'out'));
    await writeFile(join(dir, 'notes', 'report.txt'), 'inside report');
    await writeFile(join(dir, 'notes', 'sub', 'deep.txt'), 'deep inside');
    await writeFile(join(dir, 'notes-evil', 'secret.txt'), 'SECRET sibling');
    await writeFile(join(dir, 'outside', 'secret.txt'), 'SECRET outside');
    roots = await UploadRoots.open(parseUploadRoots('notes=./notes,out=./out', dir));
  });

  afterEach(async () => {
    await cleanup();
  });

  it('opens a regular file inside a root and streams it', async () => {
    const file = await roots.openFile('notes/sub/deep.txt');
    expect(file).toMatchObject({ root: 'notes', ref: 'notes/sub/deep.txt', name: 'deep.txt', size: 11 });
    expect(await readAll(file)).toBe('deep inside');
    expect(roots.names).toEqual(['notes', 'out']);
    expect(roots.localFilesSupported).toBe(true);
  });

  it('allows a symlink that stays inside the root', async () => {
    await symlink('sub/deep.txt', join(dir, 'notes', 'alias.txt'));
    await symlink('sub', join(dir, 'notes', 'subdir-link'));
    expect(await readAll(await roots.openFile('notes/alias.txt'))).toBe('deep inside');
    expect(await readAll(await roots.openFile('notes/subdir-link/deep.txt'))).toBe('deep inside');
  });

  it('allows a root that is itself a symlink, checked against its real path', async () => {
    await symlink(join(dir, 'notes'), join(dir, 'notes-link'));
    const linked = await UploadRoots.open(parseUploadRoots('n=./notes-link', dir));
    expect(linked.roots[0]?.realPath).toBe(join(dir, 'notes'));
    expect(await readAll(await linked.openFile('n/report.txt'))).toBe('inside report');
  });

  it('refuses an absolute path, listing the roots', async () => {
    const err = await refusal(roots.openFile(join(dir, 'notes', 'report.txt')), 'UPLOAD_ABSOLUTE_PATH');
    expect(err.message).toContain('notes, out');
    expect(err.details).toMatchObject({ roots: ['notes', 'out'] });
    await refusal(roots.openFile('/etc/passwd'), 'UPLOAD_ABSOLUTE_PATH');
    await refusal(roots.openFile('C:\\Windows\\win.ini'), 'UPLOAD_ABSOLUTE_PATH');
  });

  it('refuses an unknown root, listing the available names', async () => {
    const err = await refusal(roots.openFile('outside/secret.txt'), 'UPLOAD_UNKNOWN_ROOT');
    expect(err.message).toMatch(/one of: notes, out/);
    expect(err.details).toMatchObject({ root: 'outside', roots: ['notes', 'out'] });
    await refusal(roots.openFile('./notes/report.txt'), 'UPLOAD_UNKNOWN_ROOT');
    await refusal(roots.openFile('~/x'), 'UPLOAD_UNKNOWN_ROOT');
  });

  it('refuses a path naming only the root, or with a NUL byte', async () => {
    await refusal(roots.openFile('notes'), 'UPLOAD_INVALID_PATH');
    await refusal(roots.openFile('notes/'), 'UPLOAD_INVALID_PATH');
    await refusal(roots.openFile('notes/report.txt\0.png'), 'UPLOAD_INVALID_PATH');
  });

  it('refuses .. escapes, including into a sibling whose name shares the prefix', async () => {
    for (const ref of [
      'notes/../outside/secret.txt',
      'notes/sub/../../outside/secret.txt',
      'notes/../notes-evil/secret.txt',
      'notes/../../../../../etc/passwd',
      'out/../notes/report.txt',
    ]) {
      const err = await refusal(roots.openFile(ref), 'UPLOAD_PATH_ESCAPE');
      expect(err.details).toMatchObject({ ref, stage: 'path' });
    }
  });

  it('allows .. that stays inside the root', async () => {
    expect(await readAll(await roots.openFile('notes/sub/../report.txt'))).toBe('inside report');
  });

  it('refuses a symlink leading out of the root, to a file or through a directory', async () => {
    await symlink(join(dir, 'outside', 'secret.txt'), join(dir, 'notes', 'link.txt'));
    await symlink('../notes-evil', join(dir, 'notes', 'evil'));
    await symlink('/etc', join(dir, 'notes', 'etc'));
    await symlink('/dev/null', join(dir, 'notes', 'null'));
    for (const ref of ['notes/link.txt', 'notes/evil/secret.txt', 'notes/etc/passwd', 'notes/null']) {
      const err = await refusal(roots.openFile(ref), 'UPLOAD_PATH_ESCAPE');
      expect(err.message).not.toContain(dir);
    }
  });

  it('refuses a directory', async () => {
    const err = await refusal(roots.openFile('notes/sub'), 'UPLOAD_NOT_REGULAR_FILE');
    expect(err.message).toMatch(/is a directory/);
  });

  it('refuses a FIFO without hanging', async () => {
    execFileSync('mkfifo', [join(dir, 'notes', 'pipe')]);
    const err = await refusal(roots.openFile('notes/pipe'), 'UPLOAD_NOT_REGULAR_FILE');
    expect(err.message).toMatch(/FIFO/);
  });

  it('refuses a device', async () => {
    const devRoots = await UploadRoots.open([{ name: 'dev', path: '/dev' }]);
    const err = await refusal(devRoots.openFile('dev/null'), 'UPLOAD_NOT_REGULAR_FILE');
    expect(err.message).toMatch(/device/);
    await refusal(devRoots.openFile('dev/zero'), 'UPLOAD_NOT_REGULAR_FILE');
  });

  it('refuses a file that does not exist, and a dangling symlink', async () => {
    await refusal(roots.openFile('notes/missing.txt'), 'UPLOAD_FILE_NOT_FOUND');
    await refusal(roots.openFile('notes/report.txt/child'), 'UPLOAD_FILE_NOT_FOUND');
    await symlink('nowhere.txt', join(dir, 'notes', 'dangling.txt'));
    await refusal(roots.openFile('notes/dangling.txt'), 'UPLOAD_FILE_NOT_FOUND');
  });

  it('refuses local files when no roots are configured', async () => {
    const none = await UploadRoots.open([]);
    const err = await refusal(none.openFile('notes/report.txt'), 'UPLOAD_NO_ROOTS');
    expect(err.message).toMatch(/inline/);
    await refusal(UploadRoots.none().openFile('notes/report.txt'), 'UPLOAD_NO_ROOTS');
  });

  it('refuses local files where the opened descriptor cannot be checked', async () => {
    const mac = await UploadRoots.open(parseUploadRoots('notes=./notes', dir), { platform: 'darwin' });
    expect(mac.localFilesSupported).toBe(false);
    const err = await refusal(mac.openFile('notes/report.txt'), 'UPLOAD_LOCAL_FILES_UNSUPPORTED');
    expect(err.message).toMatch(/data: <base64>/);
  });

  it('stops start-up on a root that does not exist or is not a directory', async () => {
    const err = await refusal(
      UploadRoots.open(parseUploadRoots('notes=./notes,gone=./gone', dir)),
      'UPLOAD_ROOT_MISSING',
    );
    expect(err.message).toContain(`gone=${join(dir, 'gone')}`);
    expect(err.details).toEqual({ root: 'gone', path: join(dir, 'gone') });
    const file = await refusal(
      UploadRoots.open(parseUploadRoots('r=./notes/report.txt', dir)),
      'UPLOAD_ROOT_MISSING',
    );
    expect(file.message).toMatch(/not a directory/);
  });

  it('refuses a root that vanished or was re-pointed after start-up', async () => {
    await symlink(join(dir, 'notes'), join(dir, 'current'));
    const linked = await UploadRoots.open(parseUploadRoots('cur=./current', dir));
    await rm(join(dir, 'current'));
    await symlink(join(dir, 'outside'), join(dir, 'current'));
    await refusal(linked.openFile('cur/secret.txt'), 'UPLOAD_ROOT_CHANGED');
    await rename(join(dir, 'out'), join(dir, 'out-moved'));
    await refusal(roots.openFile('out/x.txt'), 'UPLOAD_ROOT_MISSING');
  });

  it('hands out the stream once', async () => {
    const file = await roots.openFile('notes/report.txt');
    try {
      file.chunks({ maxBytes: 100 });
      expect(() => file.chunks({ maxBytes: 100 })).toThrow(/already been read/);
    } finally {
      await file.close();
      await file.close();
    }
  });
});
