// The operator's console of zulip-agent, in a real headless browser (Debian's chromium, driven by
// playwright-core): the bin started with --status-port 0 logs the page's URL; the page loads with
// no console error, follows a mention as it arrives and shows the running agent (its conversation
// linked into Zulip, backend, who called it, its last line of output, redacted), renders a topic
// named like markup as text, and keeps the bot's key off the page. /metrics is read with a
// Prometheus text-format parser. A screenshot is kept under .artifacts/.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
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
import { type LauncherEvent, main } from '../src/index.js';
import { startWorld, type World } from './world.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

let browser: Browser;
let w: World;
let url: string;
let log = '';
const events: LauncherEvent[] = [];
const shutdown = new AbortController();
let exited: Promise<number>;

beforeAll(async () => {
  [browser, w] = await Promise.all([launchBrowser(), startWorld()]);
  const mcpConfig = join(w.dir, '.mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { zulip: w.server } }));
  const creds = w.sim.credentials(w.bot.userId);
  const stderr = new PassThrough();
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    log += chunk;
  });
  const ready = new Promise<void>((resolve) => {
    exited = main(
      ['--status-port', '0'],
      {
        ...w.env,
        // Each agent sets its context and then works on, until the launcher stops it.
        STUB_MODE: 'hang',
        ZULIP_SITE: creds.site,
        ZULIP_EMAIL: creds.email,
        ZULIP_API_KEY: creds.apiKey,
        ZULIP_AGENT_ALLOWED_USERS: String(w.ann.userId),
        ZULIP_AGENT_STATE_DIR: w.stateDir,
        ZULIP_AGENT_WORKDIR: w.dir,
        ZULIP_AGENT_MCP_CONFIG: mcpConfig,
        ZULIP_AGENT_STOP_GRACE_MS: '2000',
      },
      {
        stdout: new PassThrough(),
        stderr,
        shutdown: shutdown.signal,
        onReady: () => resolve(),
        onEvent: (e) => events.push(e),
      },
    );
  });
  await ready;
  url = /status page url=(\S+)/.exec(log)?.[1] as string;
});

afterAll(async () => {
  shutdown.abort();
  expect(await exited).toBe(0);
  await browser?.close();
  await w?.close();
});

describe('zulip-agent --status-port', () => {
  it('logs the page URL on stderr at start, on loopback', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('shows a running agent as the mention arrives, a hostile topic as text, and no secret', async () => {
    const { page, errors } = await watchedPage(browser);
    await page.goto(url);
    expect(await page.textContent('#agents')).toContain('No agent runs.');

    const trigger = w.mention(w.ann, HOSTILE, 'please look at this');
    // The page refreshes itself: the agent appears without a reload.
    await waitForRow(page, 'agents', `#general > ${HOSTILE}`, 'claude');
    const [running] = await panelRows(page, 'agents');
    expect(running?.[1]).toBe('claude');
    expect(running?.[3]).toBe('Ann Lee');
    // The topic is text: no element was made of it, and nothing ran.
    expect(await page.$$('#agents img, #triggers img')).toEqual([]);
    const href = await page.getAttribute('#agents tbody a', 'href');
    expect(href).toMatch(new RegExp(`^${w.sim.url}/#narrow/channel/\\d+-general/topic/.+/near/${trigger}$`));
    const recent = await panelRows(page, 'triggers');
    expect(recent[0]?.[1]).toBe(`#general > ${HOSTILE}`);
    expect(recent[0]?.[3]).toBe('start');
    // The agent's last line of output (its zulip server's log of the call it made), as its log
    // keeps it: redacted (the agent printed the key before).
    await waitForRow(page, 'agents', `#general > ${HOSTILE}`, 'tool=set_context');
    await keepScreenshot(page, 'zulip-agent-status.png');
    const text = (await page.textContent('body')) ?? '';
    expect(text).not.toContain(w.bot.apiKey);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('serves /metrics in the Prometheus text format with the launcher series', async () => {
    const body = await (await fetch(`${url}metrics`)).text();
    expect(body).not.toContain(w.bot.apiKey);
    const families = parseMetrics(body);
    const labels = { realm: new URL(w.sim.url).host, bot: w.bot.email };
    expect(families.get('zmcp_launcher_agents_running')?.samples).toEqual([{ labels, value: 1 }]);
    expect(families.get('zmcp_launcher_queue_length')?.samples).toEqual([{ labels, value: 0 }]);
    expect(families.get('zmcp_launcher_triggers_total')?.samples).toEqual([
      { labels: { action: 'start', ...labels }, value: 1 },
    ]);
    expect(families.get('zmcp_launcher_run_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(events.some((e) => e.type === 'started')).toBe(true);
  });
});
