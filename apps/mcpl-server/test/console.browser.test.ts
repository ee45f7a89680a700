// The operator's console of zulip-mcpl, in a real headless browser (Debian's chromium, driven by
// playwright-core): the bin started with --status-port 0 logs the page's URL; the page loads with
// no console error, shows each channel's delivery with the lag of one the host does not accept,
// renders a hostile stream name as text, and updates when a message arrives. /metrics is read with
// a Prometheus text-format parser. A screenshot is kept under .artifacts/.
import { PassThrough } from 'node:stream';
import { connectTcp, McplHost } from '@zmcp/mcpl';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keepScreenshot,
  launchBrowser,
  panelRows,
  parseMetrics,
  waitForRow,
  watchedPage,
} from '../../../test/support/console.js';
import { main } from '../src/main.js';
import { FULL_GRANT, type Realm, startRealm } from './world.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

let browser: Browser;
let realm: Realm;
let host: McplHost;
let url: string;
let stderrText = '';
const shutdown = new AbortController();
let exited: Promise<number>;
// The host refuses what arrives on random: that channel falls behind.
const refuseRandom = true;

beforeAll(async () => {
  [browser, realm] = await Promise.all([launchBrowser(), startRealm()]);
  realm.sim.realm.addStream({ name: HOSTILE, subscribers: [realm.bot, realm.ann] });
  const stderr = new PassThrough();
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    stderrText += chunk;
  });
  let port!: number;
  const ready = new Promise<void>((resolve) => {
    exited = main(
      ['--tcp', '0', '--status-port', '0'],
      { ...realm.env, ZMCP_LOG_LEVEL: 'info' },
      {
        shutdown: shutdown.signal,
        stderr,
        onReady: (info) => {
          if (info.transport === 'tcp') port = info.port;
          resolve();
        },
      },
    );
  });
  await ready;
  url = /status page url=(\S+)/.exec(stderrText)?.[1] as string;
  host = await McplHost.connect(await connectTcp({ port }), {
    name: 'console-host',
    version: '1',
    handlers: {
      incoming: (messages) =>
        messages.map((m) =>
          refuseRandom && m.channelId === 'zulip:random'
            ? { accepted: false, reason: 'busy' }
            : { accepted: true },
        ),
    },
  });
  const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
  await host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
  await registered;
  await host.openChannel({ channelId: 'zulip:general' });
  await host.openChannel({ channelId: 'zulip:random' });
});

afterAll(async () => {
  await host?.close();
  shutdown.abort();
  expect(await exited).toBe(0);
  await browser?.close();
  await realm?.close();
});

describe('zulip-mcpl --status-port', () => {
  it('logs the page URL on stderr at start, on loopback', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('shows the channels, a lagging one, a hostile name as text, and updates when a message arrives', async () => {
    const behind = realm.say('random', 'the host is busy');
    const { page, errors } = await watchedPage(browser);
    await page.goto(url);
    await page.waitForSelector('#delivery table');
    // The refused message: random is behind, general caught up.
    await waitForRow(page, 'delivery', '#random', 'behind');
    const rows = await panelRows(page, 'delivery');
    const random = rows.find((r) => r[0] === '#random');
    expect(random?.[1]).toBe('open');
    expect(Number(random?.[2])).toBeLessThan(behind);
    expect(random?.[3]).toMatch(/behind/);
    expect(rows.find((r) => r[0] === '#general')?.[3]).toBe('caught up');
    // The hostile stream name is text: no element was made of it, nothing ran.
    expect(rows.some((r) => r[0] === `#${HOSTILE}`)).toBe(true);
    expect(await page.$$('#delivery img')).toEqual([]);
    expect(await page.textContent('#process')).toContain('this process runs alone');

    // A message arrives and is accepted: the page follows it without a reload.
    const fresh = realm.say('general', 'a new message');
    await waitForRow(page, 'delivery', '#general', String(fresh));
    await keepScreenshot(page, 'zulip-mcpl-status.png');
    expect(errors).toEqual([]);
    const text = (await page.textContent('body')) ?? '';
    expect(text).not.toContain(realm.env.ZULIP_API_KEY);
    await page.close();
  });

  it('serves /metrics in the Prometheus text format with the delivery and tool-call series', async () => {
    await host.callTool('list_streams', {});
    const body = await (await fetch(`${url}metrics`)).text();
    expect(body).not.toContain(realm.env.ZULIP_API_KEY);
    expect(body).not.toContain('the host is busy');
    const families = parseMetrics(body);
    const labels = { realm: new URL(realm.env.ZULIP_SITE as string).host, bot: 'helper@example.test' };
    const lag = families.get('zmcp_delivery_lag_seconds');
    expect(lag?.type).toBe('GAUGE');
    expect(lag?.samples.find((s) => s.labels.channel === 'zulip:general')?.labels).toMatchObject(labels);
    for (const name of [
      'zmcp_delivery_watermark',
      'zmcp_delivery_pending_messages',
      'zmcp_delivery_held_messages',
      'zmcp_delivery_missed_messages',
      'zmcp_delivery_filters_stale',
      'zmcp_delivery_event_queue_last_event_timestamp_seconds',
      'zmcp_process_start_time_seconds',
    ]) {
      expect(families.get(name)?.samples.length, name).toBeGreaterThan(0);
    }
    const calls = families.get('zmcp_tool_calls_total');
    expect(calls?.type).toBe('COUNTER');
    expect(calls?.samples[0]?.labels).toMatchObject({ era: 'legacy', client: 'console-host', ...labels });
    expect(families.get('zmcp_tool_call_duration_seconds')?.type).toBe('HISTOGRAM');
  });
});
