import { PassThrough } from 'node:stream';
import { credentialProblem } from '@zmcp/core';
import { startZulipSim } from '@zmcp/zulip-sim';
import { describe, expect, it } from 'vitest';
import { tour } from '../scripts/tour.js';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';

describe('--demo', () => {
  it('serves the demo realm from main, then stops it', async () => {
    const stderr = new PassThrough();
    const chunks: Buffer[] = [];
    stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const shutdown = new AbortController();
    const ready = barrier();
    const run = main(
      ['--demo', '--http', '--port', '0'],
      { ZMCP_LOG_LEVEL: 'info' },
      {
        stderr,
        stdout: new PassThrough(),
        shutdown: shutdown.signal,
        onReady: () => ready.resolve(),
      },
    );
    await ready.promise;
    const log = Buffer.concat(chunks).toString('utf8');
    const site = /demo realm started site=(\S+)/.exec(log)?.[1];
    expect(site).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    shutdown.abort();
    expect(await run).toBe(0);
    // The realm is gone with the server.
    await expect(fetch(`${site}/api/v1/server_settings`)).rejects.toThrow();
  });

  it('every key the simulator issues is Zulip-shaped', async () => {
    const ids: number[] = [];
    const sim = await startZulipSim({
      seed(realm) {
        for (let i = 0; i < 20; i++) ids.push(realm.addUser({ fullName: `User ${i}` }).userId);
      },
    });
    try {
      for (const id of ids) expect(credentialProblem('apiKey', sim.credentials(id).apiKey)).toBeUndefined();
    } finally {
      await sim.close();
    }
  });

  it('tours the demo realm as an agent would, ending on the chart someone attached, opened', async () => {
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const run = main(
      ['--demo', '--http', '--port', '0'],
      { ZMCP_LOG_LEVEL: 'warn' },
      {
        stderr: new PassThrough(),
        stdout: new PassThrough(),
        shutdown: shutdown.signal,
        onReady: (info) => {
          if (info.transport === 'http') ready.resolve(info.url);
        },
      },
    );
    const lines: string[] = [];
    await tour(await ready.promise, (text = '') => lines.push(text));
    shutdown.abort();
    expect(await run).toBe(0);
    const said = lines.join('\n');
    // The default surface has the tool, and the tour's last step opens the attached chart.
    expect(lines[0]).toContain('fetch_attachment');
    const opened = said.slice(said.lastIndexOf('> Open the chart that was attached: fetch_attachment'));
    expect(opened).toMatch(
      /^> Open the chart that was attached: fetch_attachment \{"path":"\/user_uploads\/[^"]+weekly-chart\.png","message_id":\d+\}/,
    );
    expect(opened).toMatch(/Image weekly-chart\.png|image\/png/);
    expect(opened).toContain('[an image the model looks at: image/png');
  });
});
