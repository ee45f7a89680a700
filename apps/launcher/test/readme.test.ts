// Every ts block of the README runs as written and prints what the README shows, with stub
// agent CLIs and the built zulip-mcp first on PATH; the stub's record shows what the agent got.
import { symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { testReadmeExamples } from '../../../test/support/readme.js';
import { appDir, readRecords, writeStubs, zulipMcpBin } from './world.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
let records = '';

testReadmeExamples(appDir, {
  async env() {
    const bin = await mkdtemp(join(tmpdir(), 'zulip-agent-readme-bin-'));
    records = await mkdtemp(join(tmpdir(), 'zulip-agent-readme-records-'));
    dirs.push(bin, records);
    writeStubs(bin);
    symlinkSync(zulipMcpBin, join(bin, 'zulip-mcp'));
    return {
      PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
      STUB_MODE: 'quick',
      STUB_RECORD_DIR: records,
    };
  },
  check() {
    const [record] = readRecords(records);
    expect(record?.prompt).toContain('You are the on-call helper of ops.');
  },
});
