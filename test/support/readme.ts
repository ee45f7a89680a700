// README examples run as tests, from the README itself: every package's readme test reads its
// ```ts blocks with `readmeExamples` and runs them with `runExample`, and checks what they print
// against the README's own "It prints:" block with `expectPrinted`.
//
// The conventions, for README authors:
// - Every ```ts block is an example that runs as written, offline (against @zmcp/zulip-sim).
// - ```ts name.ts names the file the block is saved as, for examples of several files (one runs
//   the other). A named block runs on its own only when it has an "It prints:" block.
// - ```ts signature is a declaration listing for reference, not a program: it is not run.
// - "It prints:" (or a sentence starting "It prints" and ending in a colon) followed by a ```text
//   block, with only prose between, is what the example before it writes to stdout, exactly,
//   except that `…` stands for any text within a line.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format, promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** One ```ts block of a README. */
export interface ReadmeExample {
  /** The file name of the info string (```ts server.ts), else `example-<line>.ts`. */
  file: string;
  /** Whether the info string named the file. */
  named: boolean;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  /** The nearest heading above the block. */
  heading: string;
  code: string;
  /** The ```text block after "It prints:", when the README shows the output. */
  printed: string | undefined;
}

interface Fence {
  lang: string;
  info: string;
  line: number;
  start: number;
  end: number;
  body: string;
}

function fences(text: string): Fence[] {
  const found: Fence[] = [];
  const pattern = /^```([\w-]*)[ \t]*([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm;
  for (const m of text.matchAll(pattern)) {
    const start = m.index;
    found.push({
      lang: m[1] as string,
      info: (m[2] as string).trim(),
      line: text.slice(0, start).split('\n').length,
      start,
      end: start + m[0].length,
      body: m[3] as string,
    });
  }
  return found;
}

/** The runnable ```ts blocks of `<packageDir>/README.md`, in order (```ts signature blocks left out). */
export function readmeExamples(packageDir: string): ReadmeExample[] {
  const text = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const all = fences(text);
  const examples: ReadmeExample[] = [];
  all.forEach((fence, i) => {
    if (fence.lang !== 'ts' || fence.info === 'signature') return;
    if (fence.info !== '' && !/^[\w.-]+\.ts$/.test(fence.info))
      throw new Error(`README.md:${fence.line}: a ts block's info string is a file name or "signature"`);
    const next = all[i + 1];
    const between = next === undefined ? '' : text.slice(fence.end, next.start);
    const printed = next?.lang === 'text' && /\bIt prints\b[^`]*:\s*$/.test(between) ? next.body : undefined;
    const headings = [...text.slice(0, fence.start).matchAll(/^#{1,6} (.+)$/gm)];
    examples.push({
      file: fence.info === '' ? `example-${fence.line}.ts` : fence.info,
      named: fence.info !== '',
      line: fence.line,
      heading: headings.at(-1)?.[1] ?? '',
      code: fence.body,
      printed,
    });
  });
  return examples;
}

/** What an example wrote. */
export interface ExampleRun {
  stdout: string;
  stderr: string;
}

export interface RunExampleOptions {
  /**
   * Set in the environment while the example runs (which loses every ZULIP_* variable of the one
   * running the tests).
   */
  env?: Record<string, string>;
  /**
   * Run the example as its own process (`node --import tsx`, in its directory) instead of
   * importing it into the test: for an example that starts another file of the README by a
   * relative path. Default false.
   */
  process?: boolean;
  /** How long a process may run; default 60 s. An imported example has the test's own timeout. */
  timeoutMs?: number;
}

/** Runs `work` with the environment changed by `set` and every ZULIP_* variable unset, then restores it. */
async function withEnv<T>(set: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  for (const key of Object.keys(process.env)) if (key.startsWith('ZULIP')) delete process.env[key];
  Object.assign(process.env, set);
  try {
    return await work();
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** Runs `work` with what it writes to the console, stdout and stderr collected instead of printed. */
async function capturing(work: () => Promise<void>): Promise<ExampleRun> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = {
    log: console.log,
    info: console.info,
    debug: console.debug,
    warn: console.warn,
    error: console.error,
    stdout: process.stdout.write,
    stderr: process.stderr.write,
  };
  const to =
    (sink: string[]) =>
    (...args: unknown[]) => {
      sink.push(`${format(...args)}\n`);
    };
  const writer = (sink: string[]) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      sink.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof process.stdout.write;
  console.log = console.info = console.debug = to(out);
  console.warn = console.error = to(err);
  process.stdout.write = writer(out);
  process.stderr.write = writer(err);
  try {
    await work();
  } finally {
    Object.assign(console, { log: saved.log, info: saved.info, debug: saved.debug });
    Object.assign(console, { warn: saved.warn, error: saved.error });
    process.stdout.write = saved.stdout;
    process.stderr.write = saved.stderr;
  }
  return { stdout: out.join(''), stderr: err.join('') };
}

/**
 * Saves every block of `examples` in a fresh directory inside the package (so its imports
 * resolve as a user's would) and runs `example`, on sources: every `@zmcp/*` package resolves
 * to its `src/` through the `@zmcp/source` condition. By default the example is imported into
 * the test, with its console and stdout collected; with `process` it runs as `node --import tsx`
 * in that directory. A process the example starts itself runs without the condition, so the
 * package's own name is the one rewrite: it becomes the path of its `src/index.ts`. Rejects
 * when the example throws or exits non-zero, with what it printed.
 */
export async function runExample(
  packageDir: string,
  example: ReadmeExample,
  examples: readonly ReadmeExample[] = [example],
  options: RunExampleOptions = {},
): Promise<ExampleRun> {
  const self = (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { name: string }).name;
  const source = `'${join(packageDir, 'src', 'index.ts')}'`;
  const dir = await mkdtemp(join(packageDir, '.readme-run-'));
  let printed: Partial<ExampleRun> = {};
  try {
    for (const block of examples) {
      await writeFile(join(dir, block.file), block.code.replaceAll(`'${self}'`, source));
    }
    const file = join(dir, example.file);
    if (options.process) {
      const env: NodeJS.ProcessEnv = {};
      for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('ZULIP')) env[key] = value;
      return await run(process.execPath, ['--conditions=@zmcp/source', '--import', 'tsx', example.file], {
        cwd: dir,
        env: { ...env, ...options.env },
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 << 20,
      });
    }
    let failure: unknown;
    const result = await withEnv(options.env ?? {}, () =>
      capturing(async () => {
        try {
          await import(pathToFileURL(file).href);
        } catch (err) {
          failure = err;
        }
      }),
    );
    printed = result;
    if (failure !== undefined) throw failure;
    return result;
  } catch (err) {
    const { stderr, stdout } = { ...printed, ...(err as { stderr?: string; stdout?: string }) };
    throw new Error(
      `README example at line ${example.line} (${example.heading}) failed: ${(err as Error).message}\n` +
        `stdout:\n${stdout ?? ''}\nstderr:\n${stderr ?? ''}`,
      { cause: err },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Asserts `stdout` is what the README shows after "It prints:", `…` matching any text within a line. */
export function expectPrinted(stdout: string, example: ReadmeExample): void {
  if (example.printed === undefined)
    throw new Error(`README example at line ${example.line} has no "It prints:" block`);
  const pattern = example.printed
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^\\n]*');
  // A mismatch is reported as a diff against the README's text.
  if (!new RegExp(`^${pattern}$`).test(stdout)) expect(stdout).toBe(example.printed);
}

export interface ReadmeTestOptions {
  /** Variables an example needs (e.g. a PATH with stub programs), made before it runs. */
  env?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Run each example as its own process; see {@link RunExampleOptions.process}. */
  process?: boolean;
  timeoutMs?: number;
  /** More assertions on an example's run (what it left behind), after its output was checked. */
  check?: (example: ReadmeExample, run: ExampleRun) => void | Promise<void>;
}

/**
 * The tests of a package's README: it has examples, every one shows what it prints, and each
 * runs and prints exactly that. Call it at the top level of the package's `test/readme.test.ts`.
 */
export function testReadmeExamples(packageDir: string, options: ReadmeTestOptions = {}): void {
  const examples = readmeExamples(packageDir);
  const runnable = examples.filter((e) => !e.named || e.printed !== undefined);
  describe('README examples', () => {
    it('has examples, and shows what each prints', () => {
      expect(runnable.length).toBeGreaterThan(0);
      expect(runnable.filter((e) => e.printed === undefined).map((e) => `line ${e.line}`)).toEqual([]);
    });
    for (const example of runnable) {
      it(`runs the example under "${example.heading}" and prints what the README shows`, async () => {
        const env = await options.env?.();
        const run = await runExample(packageDir, example, examples, {
          ...(env === undefined ? {} : { env }),
          ...(options.process === undefined ? {} : { process: options.process }),
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        });
        expectPrinted(run.stdout, example);
        await options.check?.(example, run);
      });
    }
  });
}
