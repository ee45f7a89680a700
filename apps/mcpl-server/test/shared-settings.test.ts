// The settings every zmcp server shares mean the same to zulip-mcpl as to zulip-mcp: one
// environment (a deployment that runs both bins) configures both alike. Each is read through the
// one declaration in @zmcp/server-kit and opened by its runtime.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/index.js';
import { type Realm, realmPerTest } from './world.js';

let realm: Realm;
const { start, stop } = realmPerTest((r) => {
  realm = r;
});

function codeOf(result: { _meta?: Record<string, unknown> | undefined }): unknown {
  return (result._meta?.['zmcp/error'] as { code?: unknown } | undefined)?.code;
}

describe('settings zulip-mcpl shares with zulip-mcp', () => {
  it('ZULIP_WRITE_DMS=true lets DMs be sent beside a write allowlist, which otherwise leaves them out', async () => {
    const closed = await start({ env: { ZULIP_WRITE_STREAMS: 'general' } });
    const refused = await closed.host.callTool('send_dm', { to: [realm.ann], content: 'hello' });
    expect(refused.isError).toBe(true);
    // One server delivers per session: the next starts once this one is gone.
    await stop(closed);

    const open = await start({ env: { ZULIP_WRITE_STREAMS: 'general', ZULIP_WRITE_DMS: 'true' } });
    const sent = await open.host.callTool('send_dm', { to: [realm.ann], content: 'hello' });
    expect(sent.isError).toBeFalsy();
    const id = (sent.structuredContent as { message_id: number }).message_id;
    expect(realm.sim.realm.message(id)).toBeDefined();
    // The allowlist still holds for streams.
    const stream = await open.host.callTool('send_message', { stream: 'random', topic: 't', content: 'x' });
    expect(stream.isError).toBe(true);
  });

  it('ZULIP_MAX_MESSAGE_LENGTH bounds what the send tools send', async () => {
    const s = await start({ env: { ZULIP_MAX_MESSAGE_LENGTH: '20' } });
    const long = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 't',
      content: 'x'.repeat(21),
    });
    expect(long.isError).toBe(true);
    expect(codeOf(long)).toBe('CORE_MESSAGE_TOO_LONG');
    const short = await s.host.callTool('send_message', {
      stream: 'general',
      topic: 't',
      content: 'x'.repeat(20),
    });
    expect(short.isError).toBeFalsy();
  });

  it('ZULIP_PAGE_BUDGET_BYTES bounds a page of tool output', async () => {
    for (let i = 0; i < 40; i++) realm.say('general', `message ${i} ${'y'.repeat(60)}`, { topic: 'long' });
    const s = await start({ env: { ZULIP_PAGE_BUDGET_BYTES: '1KiB' } });
    const page = await s.host.callTool('fetch_history', { stream: 'general', topic: 'long', limit: 40 });
    expect(page.isError).toBeFalsy();
    const structured = page.structuredContent as { text: string; next_cursor?: string };
    expect(Buffer.byteLength(JSON.stringify(structured.text))).toBeLessThanOrEqual(1024);
    expect(structured.next_cursor).toEqual(expect.any(String));
  });

  it('reads ZULIP_TOOLSETS=default as its own default, and refuses a toolset only zulip-mcp serves', () => {
    expect(parseConfig({ ...realm.env, ZULIP_TOOLSETS: 'default' }, []).toolsets).toEqual([
      'read',
      'write',
      'attention',
    ]);
    expect(parseConfig({ ...realm.env, ZULIP_TOOLSETS: 'default,files' }, []).toolsets).toEqual([
      'read',
      'write',
      'files',
      'attention',
    ]);
    expect(() => parseConfig({ ...realm.env, ZULIP_TOOLSETS: 'read,monitor' }, [])).toThrow(
      /ZULIP_TOOLSETS: the monitor toolset is zulip-mcp's; zulip-mcpl serves read, write, browse, files, manage, attention/,
    );
  });
});
