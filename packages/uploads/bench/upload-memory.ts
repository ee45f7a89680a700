// pnpm --filter @zmcp/uploads bench [size in MiB, default 100]
//
// Uploads a 100 MiB file from an upload root to @zmcp/zulip-sim (running in a child process,
// its per-file cap raised) through @zmcp/core's ZulipClient, sampling this process's resident
// memory during the upload. Prints the peak growth as a fraction of the file size against a
// target of 0.5, and, measured in the same run for comparison, the same file read whole into
// memory before being sent (the earlier system's approach).
import { spawn } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ZulipClient } from '@zmcp/core';
import { UploadRoots, uploadAttachments } from '../src/index.js';

const MiB = 1024 * 1024;
const FILE_BYTES = Math.round(Number(process.argv[2] ?? '100') * MiB);
const TARGET = 0.5;

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

async function writeRandomFile(path: string, bytes: number): Promise<string> {
  const hash = createHash('sha256');
  const file = await open(path, 'w');
  const chunk = Buffer.allocUnsafe(MiB);
  try {
    for (let written = 0; written < bytes; written += chunk.length) {
      randomFillSync(chunk);
      hash.update(chunk);
      await file.write(chunk);
    }
  } finally {
    await file.close();
  }
  return hash.digest('hex');
}

/** Runs `work` while sampling RSS; returns the peak growth over the RSS just before it. */
async function peakGrowth(work: () => Promise<unknown>): Promise<number> {
  gc();
  gc();
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 2);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, process.memoryUsage.rss());
  return peak - baseline;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-upload-bench-'));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--conditions',
      '@zmcp/source',
      join(import.meta.dirname, 'sim-child.ts'),
      String(FILE_BYTES / MiB + 64),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let client: ZulipClient | undefined;
  try {
    const lines = createInterface({ input: child.stdout! });
    const [first] = (await once(lines, 'line')) as [string];
    const credentials = JSON.parse(first) as { site: string; email: string; apiKey: string };
    client = new ZulipClient({ ...credentials, uploadTimeoutMs: 600_000 });
    const c = client;

    const digest = await writeRandomFile(join(dir, 'big.bin'), FILE_BYTES);
    await writeRandomFile(join(dir, 'warm.bin'), MiB);
    const roots = await UploadRoots.open([{ name: 'bench', path: dir }]);
    const options = { site: credentials.site, maxFileBytes: FILE_BYTES + MiB };

    // Warm up: load every module and open the connection before measuring.
    await uploadAttachments(c, roots, [{ file: 'bench/warm.bin' }], options);

    let path = '';
    const streamed = await peakGrowth(async () => {
      const [uploaded] = await uploadAttachments(c, roots, [{ file: 'bench/big.bin' }], options);
      path = uploaded!.path;
    });

    const buffered = await peakGrowth(async () => {
      const whole = await readFile(join(dir, 'big.bin'));
      await c.uploadFile({
        filename: 'buffered.bin',
        contentType: 'application/octet-stream',
        size: whole.length,
        body: (async function* () {
          yield whole;
        })(),
      });
    });

    // Round trip, after the measurements: the realm holds exactly the file's bytes.
    const back = await c.downloadUpload(path, { maxBytes: FILE_BYTES });
    const roundTrip = createHash('sha256').update(back.bytes).digest('hex') === digest;

    const ratio = streamed / FILE_BYTES;
    const pass = ratio <= TARGET && roundTrip;
    console.log(`@zmcp/uploads bench: one ${FILE_BYTES / MiB} MiB file to zulip-sim (child process)`);
    console.log(
      `  streamed upload   peak RSS growth ${(streamed / MiB).toFixed(1).padStart(6)} MiB   ratio ${ratio.toFixed(3)}   target <= ${TARGET}   ${ratio <= TARGET ? 'PASS' : 'FAIL'}`,
    );
    console.log(
      `  buffered (compare) peak RSS growth ${(buffered / MiB).toFixed(1).padStart(5)} MiB   ratio ${(buffered / FILE_BYTES).toFixed(3)}   (file read whole, then sent)`,
    );
    console.log(`  round trip sha256 ${roundTrip ? 'matches' : 'DIFFERS'}`);
    if (!pass) process.exitCode = 1;
  } finally {
    await client?.close();
    child.stdin!.end();
    await once(child, 'exit');
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
