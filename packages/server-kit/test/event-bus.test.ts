// The SDK's ServerEventBus over PostgreSQL: what one process publishes, every process's listen
// streams hear; the publisher's own listeners at once, and never a second time.
import type { ServerEvent } from '@modelcontextprotocol/server';
import type { Broadcast } from '@zmcp/fleet';
import { afterEach, describe, expect, it } from 'vitest';
import { dropAfterAll, openTestBackend, uniqueSchema } from '../../../test/support/postgres.js';
import { sharedServerEventBus } from '../src/index.js';

dropAfterAll();

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

/** A process's broadcast on the shared schema. */
async function processOn(schema: string): Promise<Broadcast> {
  const backend = await openTestBackend({ schema });
  closing.push(backend);
  if (backend.broadcast === undefined) throw new Error('no broadcast');
  return backend.broadcast;
}

function collect(bus: ReturnType<typeof sharedServerEventBus>) {
  const heard: ServerEvent[] = [];
  const waiters: (() => void)[] = [];
  bus.subscribe((e) => {
    heard.push(e);
    for (const w of waiters.splice(0)) w();
  });
  return {
    heard,
    async until(count: number) {
      while (heard.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

describe('sharedServerEventBus', () => {
  it('carries an event to the listeners of every process, and to its own at once', async () => {
    const schema = uniqueSchema();
    const [pa, pb, pc] = [await processOn(schema), await processOn(schema), await processOn(schema)];
    const a = sharedServerEventBus(pa, 'mcp-listen/acct');
    const b = sharedServerEventBus(pb, 'mcp-listen/acct');
    const other = sharedServerEventBus(pc, 'mcp-listen/another');
    const [atA, atB, atOther] = [collect(a), collect(b), collect(other)];
    await Promise.all([pa.ready(), pb.ready(), pc.ready()]);

    const first: ServerEvent = {
      kind: 'resource_updated',
      uri: 'zulip://s/1',
      params: { uri: 'zulip://s/1' },
    };
    a.publish(first);
    // The publisher's listeners hear it before publish returns.
    expect(atA.heard).toEqual([first]);
    await atB.until(1);
    expect(atB.heard).toEqual([first]);

    const second: ServerEvent = { kind: 'tools_list_changed' };
    b.publish(second);
    await atA.until(2);
    // Notifications arrive in commit order: an echo of the first would have come before this.
    expect(atA.heard).toEqual([first, second]);
    expect(atB.heard).toEqual([first, second]);
    expect(atOther.heard).toEqual([]);
  });

  it('sends an event whose params are too large without them', async () => {
    const schema = uniqueSchema();
    const [pa, pb] = [await processOn(schema), await processOn(schema)];
    const errors: Error[] = [];
    const a = sharedServerEventBus(pa, 't', (err) => errors.push(err));
    const atB = collect(sharedServerEventBus(pb, 't'));
    await pb.ready();
    a.publish({
      kind: 'resource_updated',
      uri: 'zulip://s/big',
      params: { uri: 'zulip://s/big', blob: 'x'.repeat(10_000) },
    });
    await atB.until(1);
    expect(atB.heard).toEqual([{ kind: 'resource_updated', uri: 'zulip://s/big' }]);
    expect(errors).toHaveLength(1);
  });
});
