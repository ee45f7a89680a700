// Two zulip-mcpl servers on one state directory and session: the second must not deliver while
// the first does (both would offer every message and overwrite each other's watermarks). It
// serves its tools, waits, and takes over delivery once the first one stops.
import type { Logger } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { FULL_GRANT, type Realm, realmPerTest, serve } from './world.js';

let realm: Realm;
const { served } = realmPerTest((r) => {
  realm = r;
});

/** A logger that resolves `heard` with the fields of the first message starting with `prefix`. */
function listening(prefix: string): { logger: Logger; heard: Promise<Readonly<Record<string, unknown>>> } {
  let hear: (fields: Readonly<Record<string, unknown>>) => void = () => undefined;
  const heard = new Promise<Readonly<Record<string, unknown>>>((resolve) => {
    hear = resolve;
  });
  const log = (message: string, fields: Readonly<Record<string, unknown>> = {}) => {
    if (message.startsWith(prefix)) hear(fields);
  };
  return { logger: { debug: log, info: log, warn: log, error: log }, heard };
}

describe('one delivery per session', () => {
  it('a second server on the same session serves tools, waits for the first to stop, then delivers', async () => {
    const first = await serve(realm);
    served.push(first);
    const { logger, heard } = listening('waiting for the delivery state');
    const second = await serve(realm, { grant: null, logger });
    served.push(second);
    await second.host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    expect(await heard).toMatchObject({ pid: process.pid });
    const engine = second.app.connection(second.session)?.engine;
    expect(engine?.status()).toMatchObject({ state: 'starting', waitingFor: { pid: process.pid } });
    expect(realm.sim.queues(realm.bot)).toHaveLength(1);
    expect((await second.host.callTool('list_streams')).isError).not.toBe(true);

    await first.close();
    served.splice(served.indexOf(first), 1);
    await second.app.connection(second.session)?.started;
    expect(engine?.status().state).toBe('running');
    await second.host.openChannel({ channelId: 'zulip:general' });
    const id = realm.say('general', 'the second server hears this');
    await second.incoming.first((m) => m.messageId === String(id));
  });

  it('a server with its own session id delivers beside the first', async () => {
    const first = await serve(realm);
    served.push(first);
    const other = await serve(realm, { env: { ZULIP_SESSION_ID: 'second-agent' } });
    served.push(other);
    expect(other.app.connection(other.session)?.engine.status().state).toBe('running');
  });
});
