// The audit log: one JSON line per entry, in call order, built from named fields only (never a
// tool's content), rotated past its size into one earlier file, read back oldest first.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog, auditTarget, readAuditLog } from '../src/audit.js';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zmcp-audit-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('audit log', () => {
  it('takes the target of a call from its naming fields only, never its content', () => {
    expect(
      auditTarget({
        stream: 'general',
        topic: 'deploy',
        content: 'the secret plan',
        to: [3, 4],
        attachments: [{ data: 'x' }],
      }),
    ).toEqual({ stream: 'general', topic: 'deploy', to: [3, 4] });
    expect(auditTarget({ content: 'only content' })).toBeUndefined();
    expect(auditTarget('not an object')).toBeUndefined();
  });

  it('appends in order and rotates past its size, keeping one earlier file', async () => {
    const path = join(dir, 'logs', 'audit.log');
    const log = new AuditLog({ path, maxBytes: 400, now: () => Date.parse('2026-12-07T10:00:00Z') });
    const writes = Array.from({ length: 8 }, (_, i) =>
      log.record({
        kind: 'tool',
        action: `tool_${i}`,
        outcome: 'ok',
        userId: i,
        target: { message_id: 1000 + i },
      }),
    );
    await Promise.all(writes);
    const current = await stat(path);
    expect(current.size).toBeLessThanOrEqual(400);
    expect(current.mode & 0o777).toBe(0o600);
    const rotated = await readFile(`${path}.1`, 'utf8');
    expect(rotated.length).toBeGreaterThan(0);
    const lines = (await readAuditLog(path, 100)).map((l) => JSON.parse(l) as { action: string; at: string });
    // Oldest first, the last ones always kept: rotation drops only what is older than the earlier file.
    const actions = lines.map((l) => l.action);
    expect(actions.at(-1)).toBe('tool_7');
    expect(actions).toEqual([...actions].sort());
    expect(lines[0]?.at).toBe('2026-12-07T10:00:00.000Z');
    expect((await readAuditLog(path, 2)).map((l) => (JSON.parse(l) as { action: string }).action)).toEqual([
      'tool_6',
      'tool_7',
    ]);
  });
});
