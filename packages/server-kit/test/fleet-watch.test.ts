// watchFleet: each process registers itself in the fleet's database and the console shows every
// process and the queue owners, page and metrics, read afresh per request. Two backends on one
// schema stand for two processes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStateBackend } from '@zmcp/fleet';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetrics } from '../../../test/support/console.js';
import { dropAfterAll, openTestBackend, sql, uniqueSchema } from '../../../test/support/postgres.js';
import { OperatorConsole, watchFleet } from '../src/index.js';

dropAfterAll();

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

const makeConsole = () =>
  new OperatorConsole({
    bin: 'zulip-mcp',
    labels: { realm: 'chat.example.com', bot: 'helper@example.test' },
  });

describe('watchFleet', () => {
  it('shows every process of the fleet and the queue owner on the panel and in the metrics; a silent one as gone', async () => {
    const schema = uniqueSchema();
    const one = await openTestBackend({ schema });
    const two = await openTestBackend({ schema });
    closing.push(one, two);
    const queues = [{ account: 'chat.example.com@7', bot: 'helper@example.test' }];
    const pageOne = makeConsole();
    const pageTwo = makeConsole();
    const a = await watchFleet(pageOne, { backend: one, bin: 'zulip-mcp', queues });
    const b = await watchFleet(pageTwo, { backend: two, bin: 'zulip-mcpl', queues });
    closing.push(a, b);
    const url = await pageOne.listen({ port: 0 });
    closing.push(pageOne);
    const panels = await (await fetch(new URL('/panels', url))).text();
    expect(panels).toContain('2 processes running');
    expect(panels).toContain('<td>zulip-mcp</td>');
    expect(panels).toContain('<td>zulip-mcpl</td>');
    expect(panels.match(/\(this process\)/g)).toHaveLength(1);
    expect(panels).toContain(
      '<dt>Queue of helper@example.test</dt><dd>owner: nobody (no process reads its events yet)</dd>',
    );
    const metrics = parseMetrics(await (await fetch(new URL('/metrics', url))).text());
    const running = metrics.get('zmcp_fleet_processes');
    expect(running?.samples.map((m) => [m.labels.state, m.value])).toEqual([
      ['running', 2],
      ['gone', 0],
    ]);
    expect(metrics.get('zmcp_fleet_queue_owned')?.samples).toEqual([
      { labels: expect.objectContaining({ queue_bot: 'helper@example.test', owner: 'nobody' }), value: 0 },
    ]);
    // Process b stops answering: shown as gone, counted as gone.
    await sql(`UPDATE "${schema}".processes SET last_seen = now() - interval '1 minute' WHERE id = $1`, [
      b.process?.id,
    ]);
    const later = await (await fetch(new URL('/panels', url))).text();
    expect(later).toContain('1 processes running, 1 gone');
    expect(later).toContain('<span class="bad">gone</span>');
    // Closed: removed from the fleet.
    await b.close();
    await a.refresh();
    expect(pageOne.fleet?.processes.map((p) => p.bin)).toEqual(['zulip-mcp']);
  });

  it('does nothing on files: the page says the process runs alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-fleet-watch-'));
    const backend = await openStateBackend({ dir });
    const page = makeConsole();
    const watch = await watchFleet(page, { backend, bin: 'zulip-mcp', queues: [] });
    expect(watch.process).toBeUndefined();
    expect(page.renderPanels()).toContain('this process runs alone');
    await watch.close();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });
});
