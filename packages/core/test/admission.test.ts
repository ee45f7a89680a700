import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../src/client/logger.js';
import { isZmcpError } from '../src/errors.js';
import {
  AdmissionDirectory,
  AdmissionGate,
  isAdmissionEntry,
  parseAdmissionList,
} from '../src/policy/admission.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture;
const gates: AdmissionGate[] = [];

beforeEach(async () => {
  f = await startSimRealm();
});
afterEach(async () => {
  await Promise.all(gates.splice(0).map((g) => g.close()));
  await f.close();
});

function recordingLogger(): Logger & { lines: { message: string; fields: unknown }[] } {
  const lines: { message: string; fields: unknown }[] = [];
  const log = (message: string, fields?: unknown) => lines.push({ message, fields });
  return { lines, debug: log, info: log, warn: log, error: log };
}

async function open(list: string, options: { follow?: boolean; logger?: Logger } = {}) {
  const parsed = parseAdmissionList(list, 'TEST_USERS');
  if (parsed === undefined) throw new Error('no list');
  const gate = await AdmissionGate.open(f.client, parsed, { setting: 'TEST_USERS', ...options });
  gates.push(gate);
  return gate;
}

/** Resolves once the gate's directory has applied a change. */
function nextChange(gate: AdmissionGate): Promise<void> {
  return new Promise((resolve) => {
    const off = gate.directory.onChange(() => {
      off();
      resolve();
    });
  });
}

describe('parseAdmissionList', () => {
  it('reads user ids and email addresses, and nothing else', () => {
    expect(parseAdmissionList(' 7, Ann@Example.org ,,7, 12 ', 'X')).toEqual({
      ids: [7, 12],
      emails: ['ann@example.org'],
    });
    expect(parseAdmissionList([7, '8', 'bo@example.org'], 'X')).toEqual({
      ids: [7, 8],
      emails: ['bo@example.org'],
    });
    expect(parseAdmissionList(undefined, 'X')).toBeUndefined();
    expect(parseAdmissionList('  ', 'X')).toBeUndefined();
    for (const bad of ['Ann Lee', '@**Ann Lee**', 'ann', '0', '-3', '"a"@b.org', 'a@b@c']) {
      let caught: unknown;
      try {
        parseAdmissionList(`7,${bad}`, 'ZULIP_AGENT_ALLOWED_USERS');
      } catch (err) {
        caught = err;
      }
      expect(isZmcpError(caught, 'CORE_CONFIG_INVALID'), bad).toBe(true);
      expect((caught as Error).message).toMatch(/^ZULIP_AGENT_ALLOWED_USERS: .*names are not accepted/);
    }
    expect(() => parseAdmissionList(',,', 'X')).toThrow(/names nobody/);
    expect(() => parseAdmissionList([1.5], 'X')).toThrow(/neither a user id/);
    expect(isAdmissionEntry('ann@example.org')).toBe(true);
    expect(isAdmissionEntry('Ann Lee')).toBe(false);
  });
});

describe('AdmissionGate', () => {
  it('admits by id, resolves an email to its holder, and never admits by a display name', async () => {
    const eve = f.sim.realm.addUser({ fullName: 'Alice', email: 'eve@zulip.example' });
    const gate = await open(`${f.bob.userId},ALICE@zulip.example`);
    expect(gate.admitted).toEqual([f.alice.userId, f.bob.userId].sort((a, b) => a - b));
    expect(gate.admits(f.alice.userId)).toBe(true);
    // Eve took Alice's display name: that changes nothing.
    expect(gate.admits(eve.userId)).toBe(false);
    expect(gate.admits(f.bot.userId)).toBe(false);
  });

  it('fails to open when an entry names nobody, naming the setting and the entry', async () => {
    for (const list of ['nobody@zulip.example', '99999']) {
      const err = await open(`${f.alice.userId},${list}`).catch((e: unknown) => e);
      expect(isZmcpError(err, 'CORE_CONFIG_INVALID'), list).toBe(true);
      expect((err as Error).message).toContain('TEST_USERS');
      expect((err as Error).message).toContain(list);
    }
    // A deactivated holder holds nothing.
    f.sim.realm.deactivateUser(f.bob.userId);
    await expect(open('bob@zulip.example')).rejects.toMatchObject({ code: 'CORE_CONFIG_INVALID' });
    // Nothing was left registered.
    expect(f.sim.queues()).toEqual([]);
  });

  it('follows address changes: the old holder stops, the new one is admitted, a deactivation ends it', async () => {
    const logger = recordingLogger();
    const gate = await open('alice@zulip.example', { logger });
    expect(gate.admitted).toEqual([f.alice.userId]);

    let change = nextChange(gate);
    f.sim.realm.changeUserEmail(f.alice.userId, 'alice@elsewhere.example');
    await change;
    expect(gate.admits(f.alice.userId)).toBe(false);
    expect(gate.unresolved).toEqual(['alice@zulip.example']);
    expect(logger.lines.find((l) => l.message.includes('admits nobody'))?.fields).toEqual({
      setting: 'TEST_USERS',
      entries: 1,
    });

    change = nextChange(gate);
    f.sim.realm.changeUserEmail(f.bob.userId, 'alice@zulip.example');
    await change;
    expect(gate.admitted).toEqual([f.bob.userId]);

    change = nextChange(gate);
    f.sim.realm.deactivateUser(f.bob.userId);
    await change;
    expect(gate.admitted).toEqual([]);
  });

  it('ids alone need no event queue; a list without emails never follows', async () => {
    const gate = await open(`${f.alice.userId}`);
    expect(f.sim.queues()).toEqual([]);
    expect(gate.admits(f.alice.userId)).toBe(true);
  });

  it('counts and logs refusals by path and user id, never what was said', async () => {
    const logger = recordingLogger();
    const gate = await open(`${f.alice.userId}`, { logger });
    expect(gate.check(f.alice.userId, 'dm')).toBe(true);
    expect(gate.check(f.bob.userId, 'dismissal')).toBe(false);
    expect(gate.check(f.bob.userId, 'dismissal')).toBe(false);
    expect(gate.check(f.bot.userId, 'mention')).toBe(false);
    expect(gate.refusals()).toEqual({
      total: 3,
      byPath: {
        mention: 1,
        dm: 0,
        'follow-up': 0,
        dismissal: 2,
        approval: 0,
        reaction: 0,
        'channel-event': 0,
      },
    });
    expect(logger.lines).toEqual([
      {
        message: 'admission refused',
        fields: { path: 'dismissal', userId: f.bob.userId, setting: 'TEST_USERS' },
      },
      {
        message: 'admission refused',
        fields: { path: 'dismissal', userId: f.bob.userId, setting: 'TEST_USERS' },
      },
      {
        message: 'admission refused',
        fields: { path: 'mention', userId: f.bot.userId, setting: 'TEST_USERS' },
      },
    ]);
  });

  it('shares one directory between gates; an email that names nobody later admits nobody', () => {
    const directory = new AdmissionDirectory();
    const process = new AdmissionGate({ ids: [5], emails: [] }, { setting: 'A', directory });
    const dms = new AdmissionGate({ ids: [], emails: ['x@y.example'] }, { setting: 'B', directory });
    expect(dms.admitted).toEqual([]);
    directory.load([
      { user_id: 5, email: 'five@y.example' },
      { user_id: 6, email: 'user6@y.example', delivery_email: 'X@y.example' },
    ]);
    expect(dms.admitted).toEqual([6]);
    expect(process.admitted).toEqual([5]);
    // Two holders of one address: nobody.
    directory.apply({
      type: 'realm_user',
      id: 1,
      op: 'add',
      person: { user_id: 7, email: 'x@y.example', full_name: 'X' },
    });
    expect(dms.admitted).toEqual([]);
    directory.apply({ type: 'realm_user', id: 2, op: 'remove', person: { user_id: 7 } });
    expect(dms.admitted).toEqual([6]);
    directory.apply({
      type: 'realm_user',
      id: 3,
      op: 'update',
      person: { user_id: 6, delivery_email: null },
    });
    expect(dms.admitted).toEqual([]);
    expect(
      directory.apply({ type: 'realm_user', id: 4, op: 'update', person: { user_id: 6, full_name: 'Z' } }),
    ).toBe(false);
  });
});
