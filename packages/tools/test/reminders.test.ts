// The reminders toolset (opt-in): remind_me, list_reminders, cancel_reminder, on a Zulip 11.0
// realm (feature level 421) and a Zulip 13.0-dev realm (512), in read-only mode, under a write
// allowlist, and on a realm older than reminders.
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import { MockAgent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCatalog, DEFAULT_TOOLSETS, isServed, parseToolsets, TOOLSETS } from '../src/catalog.js';
import { reminderTools } from '../src/reminders/index.js';
import { createToolServices } from '../src/services.js';
import { checkedOk, testHost } from './call.js';
import { type Harness, startHarness } from './harness.js';

// "Now" is Monday 2026-09-14 11:42:52 in Helsinki (UTC+3), for the tools and the realm alike.
const NOW = Date.UTC(2026, 8, 14, 8, 42, 52);
const LEVELS = [421, 512] as const;
type Level = (typeof LEVELS)[number];

const realms = {} as Record<Level, Harness>;
const about = {} as Record<Level, { general: number; secret: number }>;

beforeAll(async () => {
  for (const level of LEVELS) {
    const h = await startHarness({
      timeZone: 'Europe/Helsinki',
      now: () => NOW,
      sim: { zulipFeatureLevel: level, now: () => NOW },
    });
    about[level] = {
      general: h.post(h.realm.ann, 'general', 'release', 'ship it on <b>friday</b> @**all**'),
      secret: h.post(h.realm.ann, 'secret', 'plans', 'the secret plan'),
    };
    realms[level] = h;
  }
});
afterAll(async () => {
  await Promise.all(Object.values(realms).map((h) => h.close()));
});

const posts = (h: Harness, mark: number) =>
  h.sim.requests
    .slice(mark)
    .filter((r) => r.method !== 'GET')
    .map((r) => `${r.method} ${r.path}`);

describe('the reminders toolset', () => {
  it('is opt-in: the default surface does not list it, "all" and "reminders" do', () => {
    expect(TOOLSETS).toContain('reminders');
    expect(DEFAULT_TOOLSETS).not.toContain('reminders');
    const selection = { toolsets: DEFAULT_TOOLSETS, readOnly: false };
    for (const tool of reminderTools) {
      expect(tool.toolset, tool.name).toBe('reminders');
      expect(isServed(tool, selection), tool.name).toBe(false);
      expect(isServed(tool, { toolsets: parseToolsets('reminders'), readOnly: false }), tool.name).toBe(true);
      expect(tool.description.length, tool.name).toBeLessThanOrEqual(400);
    }
    // In read-only mode only the list is served.
    const readOnly = reminderTools.filter((t) => isServed(t, { toolsets: ['reminders'], readOnly: true }));
    expect(readOnly.map((t) => t.name)).toEqual(['list_reminders']);
  });
});

describe.each(LEVELS)('on a realm at feature level %i', (level) => {
  it('schedules a reminder about a message, lists it and cancels it', async () => {
    const h = realms[level];
    const set = await h.call('remind_me', {
      message_id: about[level].general,
      when: 'tomorrow 9am',
      note: 'check the <release> went out',
    });
    const { text, structured } = checkedOk(h.tools, 'remind_me', set);
    const id = structured.reminder_id as number;
    expect(structured).toEqual({
      reminder_id: id,
      message_id: about[level].general,
      due: '2026-09-15T09:00:00+03:00',
      due_unix: Date.UTC(2026, 8, 15, 6) / 1000,
    });
    expect(text).toBe(
      `Reminder ${id} set for 2026-09-15T09:00:00+03:00 (Europe/Helsinki) about message ${about[level].general} in #general > release: Notification Bot will send you a direct message then, quoting it with your note.`,
    );
    const pending = h.sim.realm.reminders(h.realm.bot.userId);
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ reminderId: id, targetMessageId: about[level].general });
    expect(pending[0]?.content).toContain('check the <release> went out');

    const listed = checkedOk(h.tools, 'list_reminders', await h.call('list_reminders', {}));
    expect(listed.text).toBe(
      `1 reminder pending (showing 1–1 of 1), soonest first; fetch_around shows a message in its conversation.\nreminder ${id}: 2026-09-15T09:00:00+03:00, about message ${about[level].general}`,
    );
    expect(listed.structured.reminders).toEqual([structured]);

    const cancelled = checkedOk(
      h.tools,
      'cancel_reminder',
      await h.call('cancel_reminder', { reminder_id: id }),
    );
    expect(cancelled.text).toBe(`Reminder ${id} cancelled.`);
    expect(h.sim.realm.reminders(h.realm.bot.userId)).toEqual([]);
    const again = await h.call('cancel_reminder', { reminder_id: id });
    expect(again).toMatchObject({ isError: true, code: 'TOOLS_NOT_FOUND' });
    expect(again.text).toContain('list_reminders');
    expect(checkedOk(h.tools, 'list_reminders', await h.call('list_reminders', {})).text).toBe(
      'No reminders pending.',
    );
  });

  it('refuses a time it cannot read or that has passed, naming when, before asking the realm', async () => {
    const h = realms[level];
    for (const when of ['today 9:00', 'tomorrow', 'whenever']) {
      const mark = h.sim.requests.length;
      const out = await h.call('remind_me', { message_id: about[level].general, when });
      expect(out, when).toMatchObject({ isError: true, code: 'TOOLS_INVALID_INPUT' });
      expect(out.text).toContain('when:');
      expect(h.sim.requests.length).toBe(mark);
    }
  });

  it('refuses a message this session may not read as not found, and schedules nothing', async () => {
    const h = realms[level];
    const mark = h.sim.requests.length;
    const out = await h.call('remind_me', { message_id: about[level].secret, when: 'in 2 hours' });
    expect(out).toMatchObject({ isError: true, code: 'TOOLS_NOT_FOUND' });
    expect(posts(h, mark)).toEqual([]);
    expect(h.sim.realm.reminders(h.realm.bot.userId)).toEqual([]);
  });
});

describe('the access policy', () => {
  it('refuses a reminder in a conversation the write allowlist leaves out', async () => {
    const h = realms[512];
    const { host } = testHost(
      createCatalog({
        ...h.services,
        policy: AccessPolicy.resolve({ readOnly: false, writeStreams: ['dev'] }, [
          { name: 'general', stream_id: h.realm.streams.general, invite_only: false },
          { name: 'dev', stream_id: h.realm.streams.dev, invite_only: false },
        ]),
      }),
    );
    const mark = h.sim.requests.length;
    const out = await host.call('remind_me', { message_id: about[512].general, when: 'in 1 hour' });
    expect(out).toMatchObject({ isError: true, code: 'CORE_ACCESS_DENIED' });
    expect(posts(h, mark)).toEqual([]);
  });

  it('refuses remind_me and cancel_reminder in read-only mode, nothing sent; list_reminders still reads', async () => {
    const h = await startHarness({
      policy: { readOnly: true },
      now: () => NOW,
      sim: { zulipFeatureLevel: 512, now: () => NOW },
    });
    try {
      const id = h.post(h.realm.ann, 'general', 'ro', 'a message');
      const mark = h.sim.requests.length;
      for (const [name, args] of [
        ['remind_me', { message_id: id, when: 'in 1 hour' }],
        ['cancel_reminder', { reminder_id: 1 }],
      ] as const) {
        const out = await h.call(name, args);
        expect(out, name).toMatchObject({ isError: true, code: 'CORE_READ_ONLY' });
      }
      expect(checkedOk(h.tools, 'list_reminders', await h.call('list_reminders', {})).text).toBe(
        'No reminders pending.',
      );
      expect(posts(h, mark)).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

describe('on a realm older than reminders (Zulip 9.0, feature level 300)', () => {
  it('refuses every reminder tool with CORE_UNSUPPORTED, and sends nothing to the realm', async () => {
    const site = 'https://old.zulip.example';
    const agent = new MockAgent({ connections: 1 });
    agent.disableNetConnect();
    const pool = agent.get(site);
    const seen: string[] = [];
    pool
      .intercept({ path: '/api/v1/server_settings', method: 'GET' })
      .reply(200, { result: 'success', msg: '', zulip_version: '9.0', zulip_feature_level: 300 })
      .persist();
    pool
      .intercept({ path: () => true, method: () => true })
      .reply((req) => {
        seen.push(`${req.method} ${req.path}`);
        return { statusCode: 404, data: { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' } };
      })
      .persist();
    const client = new ZulipClient({
      site,
      email: 'helper-bot@old.zulip.example',
      apiKey: 'Xy7Qp2LmN8rT4vW6zA1bC3dE5fG7hJ9k',
      dispatcher: agent,
    });
    try {
      const services = createToolServices({
        client,
        policy: new AccessPolicy({ readOnly: false }),
        site,
        identity: {
          user_id: 9,
          email: 'helper-bot@old.zulip.example',
          full_name: 'Helper Bot',
          is_bot: true,
        },
        maxMessageLength: 10_000,
        maxFileBytes: 1024,
        now: () => NOW,
      });
      const { host } = testHost(createCatalog(services));
      for (const [name, args] of [
        ['remind_me', { message_id: 5, when: 'in 1 hour' }],
        ['list_reminders', {}],
        ['cancel_reminder', { reminder_id: 3 }],
      ] as const) {
        const out = await host.call(name, args);
        expect(out, name).toMatchObject({ isError: true, code: 'CORE_UNSUPPORTED' });
        expect(out.text).toContain('Reminders needs Zulip feature level 399 or newer; this realm is at 300');
      }
      expect(seen).toEqual([]);
    } finally {
      await client.close();
      await agent.close();
    }
  });
});
