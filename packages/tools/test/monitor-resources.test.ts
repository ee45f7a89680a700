import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResourceDefinition } from '../src/tool.js';
import {
  type MonitorHarness,
  type MonitorInstance,
  nextChange,
  ok,
  startMonitorHarness,
} from './monitor-fixtures.js';

const SUMMARY = 'zulip://unread/summary';
const STATUS = 'zulip://monitoring/status';
const signal = () => AbortSignal.timeout(15_000);

function resource(m: MonitorInstance, uri: string): ResourceDefinition {
  const found = m.catalog.resources.find((r) => r.uri === uri);
  if (found === undefined) throw new Error(`no resource ${uri}`);
  return found;
}

async function readText(m: MonitorInstance, uri: string): Promise<string> {
  return (await resource(m, uri).read({ signal: signal() })).text;
}

async function readStatus(m: MonitorInstance) {
  const contents = await resource(m, STATUS).read({ signal: signal() });
  expect(contents.mimeType).toBe('application/json');
  return JSON.parse(contents.text) as {
    streams: { stream: string; stream_id: number | null; cursor: number | null; uri: string }[];
    live_updates: { running: boolean; state: string; detail: string | null };
    read_only: boolean;
  };
}

function template(m: MonitorInstance) {
  const t = m.catalog.resourceTemplates[0];
  if (t === undefined) throw new Error('no template');
  return t;
}

describe('monitor resources', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness();
    m.h.sim.realm.addStream({ name: 'dev ops/x', subscribers: [m.h.realm.ann.userId, m.h.realm.bot.userId] });
  });
  afterAll(async () => {
    await m.close();
  });

  it('are declared with their URIs and types', () => {
    expect(m.catalog.resources.map((r) => [r.uri, r.mimeType])).toEqual([
      [SUMMARY, 'text/plain'],
      [STATUS, 'application/json'],
    ]);
    expect(template(m)).toMatchObject({
      uriTemplate: 'zulip://channel/{stream}/unread',
      mimeType: 'text/plain',
    });
  });

  it('say so when nothing is monitored', async () => {
    expect(await readText(m, SUMMARY)).toBe('No streams are monitored (start_monitoring begins).');
    expect(await template(m).list({ signal: signal() })).toEqual([]);
    const status = await readStatus(m);
    expect(status).toEqual({
      streams: [],
      live_updates: { running: false, state: 'idle', detail: expect.stringContaining('subscribes') },
      read_only: false,
    });
  });

  it('show unread counts, cursors and one stream’s unread lines without moving its cursor', async () => {
    m.post('general', 'before');
    await m.call('start_monitoring', { streams: ['general', 'dev ops/x'] });
    const cursor = (await m.monitor.list()).find((s) => s.name === 'general')?.lastReadId;
    const a = m.post('general', 'first <i>news</i>');
    const b = m.post('general', 'second');
    m.post('general', 'for humans only /nobots');
    m.h.sim.realm.sendMessage({
      senderId: m.h.realm.bot.userId,
      type: 'stream',
      stream: 'general',
      topic: 'chat',
      content: 'the bot speaking',
    });
    const ops = m.post('dev ops/x', 'in an awkward name');

    expect((await readText(m, SUMMARY)).split('\n')).toEqual([
      '3 unread in 2 monitored streams (get_unread_messages reads them).',
      `#dev ops/x: 1 unread, newest id=${ops}`,
      `#general: 2 unread, newest id=${b}`,
    ]);

    const status = await readStatus(m);
    expect(status.streams).toEqual([
      {
        stream: 'dev ops/x',
        stream_id: m.h.sim.realm.stream('dev ops/x')?.streamId,
        cursor: null,
        uri: 'zulip://channel/dev%20ops%2Fx/unread',
      },
      {
        stream: 'general',
        stream_id: m.h.realm.streams.general,
        cursor,
        uri: 'zulip://channel/general/unread',
      },
    ]);

    expect(await template(m).list({ signal: signal() })).toEqual([
      { uri: 'zulip://channel/dev%20ops%2Fx/unread', name: '#dev ops/x unread' },
      { uri: 'zulip://channel/general/unread', name: '#general unread' },
    ]);
    const general = await template(m).read(
      'zulip://channel/general/unread',
      { stream: 'GENERAL' },
      { signal: signal() },
    );
    expect(general.mimeType).toBe('text/plain');
    const lines = general.text.split('\n');
    expect(lines[0]).toBe(`#general: 2 unread messages after id=${cursor}, oldest first.`);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(
      new RegExp(`id=${a}\\] \\[#general > chat\\] Ann Lee: first &lt;i>news&lt;/i>$`),
    );
    expect(lines[2]).toContain(`id=${b}]`);
    const awkward = await template(m).read('', { stream: 'dev ops/x' }, { signal: signal() });
    expect(awkward.text.split('\n')[0]).toBe('#dev ops/x: 1 unread message from the start, oldest first.');
    // Reading resources moved nothing.
    expect((await m.monitor.list()).find((s) => s.name === 'general')?.lastReadId).toBe(cursor);

    ok(m, 'get_unread_messages', await m.call('get_unread_messages', {}));
    expect((await readText(m, SUMMARY)).split('\n')).toEqual([
      '0 unread in 2 monitored streams (get_unread_messages reads them).',
      '#dev ops/x: 0 unread',
      '#general: 0 unread',
    ]);
    expect((await template(m).read('', { stream: 'general' }, { signal: signal() })).text).toBe(
      `#general: nothing unread after id=${(await m.monitor.list()).find((s) => s.name === 'general')?.lastReadId}.`,
    );
  });

  it('refuse a stream that is not monitored', async () => {
    await expect(template(m).read('', { stream: 'dev' }, { signal: signal() })).rejects.toMatchObject({
      code: 'TOOLS_NOT_FOUND',
    });
  });
});

describe('monitor resources in read-only mode', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness({ policy: { readOnly: true } });
  });
  afterAll(async () => {
    await m.close();
  });

  it('read fine, and the status says live updates are off and why', async () => {
    await m.call('start_monitoring', { streams: ['general'] });
    const id = m.post('general', 'polled');
    const { unsubscribe } = nextChange(m.catalog, () => false);
    expect(m.h.sim.queues()).toEqual([]);
    const status = await readStatus(m);
    expect(status.read_only).toBe(true);
    expect(status.live_updates).toEqual({
      running: false,
      state: 'unavailable',
      detail: expect.stringMatching(/read-only/i),
    });
    expect(await readText(m, SUMMARY)).toContain(`#general: 1 unread, newest id=${id}`);
    expect((await template(m).read('', { stream: 'general' }, { signal: signal() })).text).toContain(
      `id=${id}]`,
    );
    await unsubscribe();
  });
});
