// Wake latency of zulip-mcpl: from a message posted in a simulated realm to `channels/incoming`
// reaching the host, against a bare long-poll client (GET /events on a registered queue) in the
// same run. Prints both medians and their ratio. `BENCH_ROUNDS` sets the measured rounds (default 60).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { ZulipClient } from '@zmcp/core';
import { McplHost } from '@zmcp/mcpl';
import { startZulipSim } from '@zmcp/zulip-sim';
import { alternateWithBare, arrivalClock, wakeRealm, wakeReport } from '../../../test/support/wake-bench.js';
import { createZulipMcpl, parseConfig } from '../src/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const WARMUP = 5;

const realm = wakeRealm(await startZulipSim({ rateLimit: false }));
const stateDir = await mkdtemp(join(tmpdir(), 'zulip-mcpl-bench-'));
const creds = realm.sim.credentials(realm.bot);
const config = parseConfig(
  {
    HOME: stateDir,
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZULIP_STATE_DIR: stateDir,
    AGENT_TIMEZONE: 'UTC',
  },
  [],
);
const app = await createZulipMcpl({ config });
const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
const served = app.serve(serverSide);
const host = await McplHost.connect(hostSide, { name: 'bench-host', version: '1' });
const session = await served;
await host.setPolicy({ effectiveCapabilities: ['tools', 'pushEvents', 'channels.*'] });
await app.connection(session)?.started;
await host.openChannel({ channelId: 'zulip:general' });
// The moment the host has the message: taken as it arrives, before the host answers.
const clock = arrivalClock();
host.on('incoming', (messages) => {
  for (const m of messages) clock.heard(m.messageId);
});

const times = await alternateWithBare(realm, {
  bare: new ZulipClient(creds),
  rounds: ROUNDS,
  warmup: WARMUP,
  async measured(round) {
    const ms = await clock.time(() => realm.post('general', `mcpl ${round}`));
    // The host's answer is read and the watermark moves outside the timing.
    await app.connection(session)?.sink.settled('zulip:general');
    return ms;
  },
});
process.stdout.write(
  wakeReport(
    `zulip-mcpl wake latency over ${ROUNDS} rounds (${WARMUP} warm-up rounds each side), zulip-sim on loopback, host in process`,
    {
      bare: 'bare long-poll (GET /events)',
      measured: 'zulip-mcpl to channels/incoming',
      ratio: 'ratio zulip-mcpl / bare',
    },
    times,
    1.5,
  ),
);

await host.close();
await app.close();
await realm.sim.close();
await rm(stateDir, { recursive: true, force: true });
