import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/bin.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));

interface Bin {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves once stdout has carried `text`. */
  printed(text: string): Promise<void>;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function start(...args: string[]): Bin {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions', '@zmcp/source', fixture, ...args],
    {
      cwd: packageDir,
      env: { ...process.env, FIXTURE_VALUE: 'from-env' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    for (const w of waiters) if (stdout.includes(w.text)) w.resolve();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return {
    child,
    printed: (text) =>
      new Promise((resolve) => {
        if (stdout.includes(text)) resolve();
        else waiters.push({ text, resolve });
      }),
    exited,
  };
}

describe('runBin', () => {
  it('hands main argv and env; the first SIGTERM asks it to shut down, and its code is the exit code', async () => {
    const bin = start('wait', '--flag');
    await bin.printed('ready\n');
    bin.child.kill('SIGTERM');
    const { code, stdout } = await bin.exited;
    expect(stdout).toBe('ready\nclean wait --flag from-env\n');
    expect(code).toBe(0);
  });

  it('exits at once on a second signal: 130 after SIGINT', async () => {
    const bin = start('hang');
    await bin.printed('ready\n');
    bin.child.kill('SIGINT');
    await bin.printed('stopping\n');
    bin.child.kill('SIGINT');
    expect((await bin.exited).code).toBe(130);
  });

  it('exits with 143 on a second SIGTERM', async () => {
    const bin = start('hang');
    await bin.printed('ready\n');
    bin.child.kill('SIGTERM');
    await bin.printed('stopping\n');
    bin.child.kill('SIGTERM');
    expect((await bin.exited).code).toBe(143);
  });

  it('lets stdout drain before exiting with main’s code', async () => {
    const { code, stdout } = await start('flood').exited;
    expect(stdout.length).toBe(1 << 20);
    expect(code).toBe(3);
  });

  it('prints a failure of main as one line on stderr and exits 1', async () => {
    const { code, stderr } = await start('throw').exited;
    expect(stderr).toBe('fixture-bin: it broke\n');
    expect(code).toBe(1);
  });
});
