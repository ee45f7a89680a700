import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consumeInterruptFile, parseInterruptNotes } from '@zmcp/delivery';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InterruptMailbox } from './mailbox.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zulip-agent-mailbox-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('InterruptMailbox', () => {
  it('keeps notes the agent has not taken when another arrives, oldest first, each naming its message', async () => {
    const box = new InterruptMailbox(join(dir, 'interrupt'));
    await Promise.all([box.post(1, 'first'), box.post(2, 'second')]);
    expect(parseInterruptNotes(await readFile(box.path, 'utf8'))).toEqual([
      { text: 'first', messageId: 1 },
      { text: 'second', messageId: 2 },
    ]);
    expect(await box.drain()).toEqual([1, 2]);
    expect(existsSync(box.path)).toBe(false);
  });

  it('forgets what the agent took (as the server takes it), and reports only the rest at the end', async () => {
    const box = new InterruptMailbox(join(dir, 'interrupt'));
    await box.post(1, 'first');
    expect(parseInterruptNotes((await consumeInterruptFile(box.path)) ?? '')).toEqual([
      { text: 'first', messageId: 1 },
    ]);
    await box.post(2, 'second');
    expect(await box.drain()).toEqual([2]);
    await box.post(3, 'third');
    expect(await consumeInterruptFile(box.path)).toBeDefined();
    expect(await box.drain()).toEqual([]);
  });
});
