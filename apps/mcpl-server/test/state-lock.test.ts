// Two zulip-mcpl servers on one state directory and session: the second must not deliver (both
// would offer every message and overwrite each other's watermarks); its tools still work.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Realm, type Served, serve, startRealm } from './world.js';

let realm: Realm;
const served: Served[] = [];

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  for (const s of served.splice(0)) await s.close();
  await realm.close();
});

describe('one delivery per session', () => {
  it('a second server on the same session serves tools but not delivery, until it has its own session id', async () => {
    const first = await serve(realm);
    served.push(first);
    const second = await serve(realm);
    served.push(second);
    const engine = second.app.connection(second.session)?.engine;
    expect(engine?.status()).toMatchObject({ state: 'failed', code: 'DELIVERY_STATE_LOCKED' });
    expect((await second.host.callTool('list_streams')).isError).not.toBe(true);

    const third = await serve(realm, { env: { ZULIP_SESSION_ID: 'second-agent' } });
    served.push(third);
    expect(third.app.connection(third.session)?.engine.status().state).toBe('running');
  });
});
