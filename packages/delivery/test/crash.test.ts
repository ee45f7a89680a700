import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { FileStateStore } from '@zmcp/delivery';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashState } from './fixtures/crash-state.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const writerScript = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url));

const CHILDREN = 5;
const SESSIONS_PER_CHILD = 10; // 50 crash observations in all
const STATE_BYTES = 256 * 1024;
const PARALLEL = 2;

const CrashStateSchema = z.object({ session: z.string(), seq: z.number().int(), blob: z.string() });

// A seeded generator: the kill schedule is the same on every run.
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Progress {
  writing: number; // highest seq announced as started
  wrote: number; // highest seq announced as finished
}

const running = new Set<ChildProcess>();
const dirs: string[] = [];

afterEach(async () => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/**
 * Runs one writer child and kills it with SIGKILL once it has announced `killAfter` lines
 * (every line is a point in the middle of the write loop); returns what each session announced.
 */
async function runAndKill(dir: string, killAfter: number): Promise<Map<string, Progress>> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--conditions',
      '@zmcp/source',
      writerScript,
      dir,
      String(SESSIONS_PER_CHILD),
      String(STATE_BYTES),
    ],
    { cwd: packageDir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.add(child);
  const progress = new Map<string, Progress>();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  let lines = 0;
  const reader = createInterface({ input: child.stdout! });
  reader.on('line', (line) => {
    const [what, session, seqText] = line.split(' ');
    if (session === undefined || seqText === undefined) return;
    const seq = Number(seqText);
    const entry = progress.get(session) ?? { writing: 0, wrote: 0 };
    if (what === 'writing') entry.writing = Math.max(entry.writing, seq);
    if (what === 'wrote') entry.wrote = Math.max(entry.wrote, seq);
    progress.set(session, entry);
    lines++;
    if (lines === killAfter) child.kill('SIGKILL');
  });
  const { signal } = await closed;
  running.delete(child);
  expect(signal, `writer ended on its own: ${stderr}`).toBe('SIGKILL');
  return progress;
}

async function checkSurvivors(dir: string, progress: Map<string, Progress>): Promise<void> {
  const store = new FileStateStore({ dir });
  for (let i = 0; i < SESSIONS_PER_CHILD; i++) {
    const session = `s${i}`;
    const seen = progress.get(session) ?? { writing: 0, wrote: 0 };
    // Never torn: the file parses, matches the schema, and is exactly one complete state,
    // either the last one fully written or the one being written at the kill.
    const state = await store.read({ session, kind: 'delivery' }, CrashStateSchema);
    if (state === undefined) {
      expect(seen.wrote, `${session}: file missing after a completed write`).toBe(0);
      continue;
    }
    expect([seen.wrote, seen.writing]).toContain(state.seq);
    expect(state).toEqual(crashState(session, state.seq, STATE_BYTES));
  }
}

describe('FileStateStore under SIGKILL', () => {
  it('a crash mid-write of the state file leaves the old or the new state', async () => {
    const random = mulberry32(0x5eed);
    const plans = Array.from({ length: CHILDREN }, () => ({
      // Kill somewhere between the first writes and a few rounds in, on any line.
      killAfter: SESSIONS_PER_CHILD * 2 + Math.floor(random() * SESSIONS_PER_CHILD * 6),
    }));
    let lastDir = '';
    const queue = [...plans];
    const worker = async (): Promise<void> => {
      for (let plan = queue.shift(); plan !== undefined; plan = queue.shift()) {
        const dir = await mkdtemp(join(tmpdir(), 'zmcp-delivery-crash-'));
        dirs.push(dir);
        const progress = await runAndKill(dir, plan.killAfter);
        await checkSurvivors(dir, progress);
        lastDir = dir;
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));

    // The killed writer's temp files are swept by the next write to each key, and the
    // survivors keep mode 0600.
    const store = new FileStateStore({ dir: lastDir });
    for (let i = 0; i < SESSIONS_PER_CHILD; i++) {
      await store.update({ session: `s${i}`, kind: 'delivery' }, CrashStateSchema, (prev) => ({
        session: `s${i}`,
        seq: (prev?.seq ?? 0) + 1,
        blob: 'after the crash',
      }));
      expect((await stat(store.pathOf({ session: `s${i}`, kind: 'delivery' }))).mode & 0o777).toBe(0o600);
    }
    expect((await readdir(lastDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  }, 60_000);
});
