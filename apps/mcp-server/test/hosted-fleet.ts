// Hosted for an organization across processes: two built `zulip-mcp --http` processes with
// per-person tokens share one state (a directory, or PostgreSQL with ZULIP_STATE_URL); tokens are
// issued and revoked by the built `zulip-mcp tokens` command (the key on stdin). A revoked token,
// and one whose time ran out, is refused on the next request by both processes. Then every byte
// the test saw (each process's log, the argv of every spawned process, the commands' output, every
// answer and tool output, the audit log and the stored state, files or rows) is scanned for a
// token, an API key, the secret key or the database password.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { FileStateStore, type StateStore, stateAccount } from '@zmcp/delivery';
import { openStateBackend } from '@zmcp/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, sql, withPassword } from '../../../test/support/postgres.js';
import { TokenRegistry } from '../src/tokens.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

const appDir = join(import.meta.dirname, '..');
const bin = join(appDir, 'dist', 'cli.js');
const secretBytes = Buffer.alloc(32, 11);
const secretKey = secretBytes.toString('base64');

const DB_PASSWORD = 'pg-pw-never-shown-5e1d';

/** The whole suite, on one backend: `files` (a shared state directory) or `postgres` (ZULIP_STATE_URL). */
export function describeHostedFleet(backend: 'files' | 'postgres'): void {
  let realm: SmallRealm;
  let stateDir = '';
  /** ZULIP_STATE_URL, with a password that must show nowhere; unset on the directory. */
  let stateUrl: string | undefined;
  /** Each process's status page, by its MCP endpoint. */
  const statusPages = new Map<string, string>();
  let boId = 0;
  const children: ChildProcessWithoutNullStreams[] = [];
  /** Everything a person or an operator could have seen: scanned for secrets at the end. */
  const seen: string[] = [];

  function env(): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '',
      ...realm.env(stateDir, {
        ZMCP_HTTP_AUTH: 'people',
        ZULIP_SECRET_KEY: secretKey,
        ZMCP_LOG_LEVEL: 'debug',
        ZMCP_TOKEN_MAX_WAITS: '1',
        ZMCP_STATUS_PORT: '0',
        ...(stateUrl === undefined ? {} : { ZULIP_STATE_URL: stateUrl }),
      }),
    };
  }

  /** Runs the built bin to completion with `stdin`; resolves with its exit code and output. */
  function runBin(
    args: string[],
    stdin = '',
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(bin, args, { cwd: appDir, env: env() });
    seen.push(JSON.stringify(child.spawnargs));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    child.stdin.end(stdin);
    return new Promise((resolve) =>
      child.once('close', (code) => {
        // `tokens create` prints the new token on stdout, once, by design: all else is scanned.
        seen.push(args[1] === 'create' ? '' : stdout, stderr);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  /** Starts one `zulip-mcp --http` on a free port; resolves with its endpoint. */
  function startServer(): Promise<string> {
    const child = spawn(bin, ['--http', '--port', '0'], { cwd: appDir, env: env() });
    children.push(child);
    seen.push(JSON.stringify(child.spawnargs));
    child.stdin.end();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('close', () => seen.push(stderr));
    return new Promise((resolve, reject) => {
      child.stderr.on('data', () => {
        const match = /listening url=(\S+)/.exec(stderr);
        const status = /status page url=(\S+)/.exec(stderr);
        if (match && status) {
          statusPages.set(match[1] as string, status[1] as string);
          resolve(match[1] as string);
        }
      });
      child.once('exit', (code) => reject(new Error(`zulip-mcp exited ${code}`)));
    });
  }

  async function issue(userId: number, label: string): Promise<string> {
    const { email, apiKey } = realm.sim.credentials(userId);
    const out = await runBin(
      ['tokens', 'create', '--label', label, '--email', email, '--api-key-stdin', '--toolsets', 'all'],
      `${apiKey}\n`,
    );
    expect(out.code).toBe(0);
    return out.stdout.trim();
  }

  async function listStreams(url: string, token: string): Promise<{ status: number; text: string }> {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'list_streams',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'list_streams',
          arguments: {},
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          },
        },
      }),
    });
    const text = `${res.status} ${res.headers.get('www-authenticate') ?? ''} ${await res.text()}`;
    seen.push(text);
    return { status: res.status, text };
  }

  let a = '';
  let b = '';
  const tokens = { ann: '', bo: '', late: '' };

  beforeAll(async () => {
    realm = await startSmallRealm('hosted-fleet');
    boId = realm.sim.realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' }).userId;
    stateDir = await mkdtemp(join(tmpdir(), 'zmcp-hosting-processes-'));
    stateUrl = backend === 'postgres' ? withPassword(await freshDatabase(), DB_PASSWORD) : undefined;
    tokens.ann = await issue(realm.annId, 'ann');
    tokens.bo = await issue(boId, 'bo');
    // A token whose time ran out: issued an hour ago for half an hour.
    const site = realm.sim.credentials(realm.botId).site;
    const hourAgo = Date.now() - 3_600_000;
    const opened =
      stateUrl === undefined ? undefined : await openStateBackend({ url: stateUrl, dir: stateDir });
    const store: StateStore = opened?.store ?? new FileStateStore({ dir: stateDir });
    const registry = new TokenRegistry({
      store,
      account: stateAccount({ site, userId: realm.botId }),
      secretKey: secretBytes,
      now: () => hourAgo,
    });
    const { apiKey, email } = realm.sim.credentials(realm.annId);
    tokens.late = (
      await registry.create({
        label: 'late',
        userId: realm.annId,
        email,
        fullName: 'Ann Lee',
        apiKey,
        toolsets: ['read'],
        writeAs: 'bot',
        expiresAt: new Date(hourAgo + 1_800_000),
      })
    ).token;
    await opened?.close();
    [a, b] = await Promise.all([startServer(), startServer()]);
  });

  afterAll(async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('close', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    await realm.sim.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  describe(`two processes serving per-person tokens from one ${backend === 'postgres' ? 'PostgreSQL database (ZULIP_STATE_URL)' : 'state directory'}`, () => {
    it('refuse a revoked token on the next request, on both', async () => {
      expect((await listStreams(a, tokens.ann)).status).toBe(200);
      expect((await listStreams(b, tokens.ann)).status).toBe(200);
      expect((await listStreams(a, tokens.bo)).status).toBe(200);
      const revoked = await runBin(['tokens', 'revoke', 'ann']);
      expect(revoked.code).toBe(0);
      for (const url of [a, b]) {
        const answer = await listStreams(url, tokens.ann);
        expect(answer.status).toBe(401);
        expect(answer.text).toContain('error_description="the token was revoked"');
        // Bo's token is untouched.
        expect((await listStreams(url, tokens.bo)).status).toBe(200);
      }
    });

    it('refuse an expired token on both', async () => {
      for (const url of [a, b]) {
        const answer = await listStreams(url, tokens.late);
        expect(answer.status).toBe(401);
        expect(answer.text).toContain('the token has expired');
      }
      const listed = await runBin(['tokens', 'list']);
      expect(listed.stdout).toMatch(/ revoked {2}"ann"/);
      expect(listed.stdout).toMatch(/ expired {2}"late"/);
    });

    it('serve a whole client session with a person’s token', async () => {
      const client = new Client({ name: 'fleet', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(b), {
          requestInit: { headers: { authorization: `Bearer ${tokens.bo}` } },
        }),
      );
      const sent = await client.callTool({
        name: 'send_message',
        arguments: { stream: 'general', topic: 'fleet', content: 'hello from Bo’s agent' },
      });
      seen.push(JSON.stringify(sent));
      expect(sent.isError).toBeFalsy();
      const id = (sent.structuredContent as { message_id: number }).message_id;
      expect(realm.sim.realm.message(id)?.senderId).toBe(realm.botId);
      seen.push(
        JSON.stringify(
          await client.callTool({
            name: 'send_message',
            arguments: { stream: 'nowhere', topic: 't', content: 'x' },
          }),
        ),
      );
      seen.push(JSON.stringify(await client.listTools()));
      await client.close();
      const audit = await runBin(['audit', '--last', '50']);
      expect(audit.stdout).toContain('"action":"send_message"');
      expect(audit.stdout).toContain('"action":"token.revoke"');
    });

    if (backend === 'postgres') {
      it('show both processes and the queue’s owner on each status page and its metrics', async () => {
        for (const url of [a, b]) {
          const status = statusPages.get(url) as string;
          const panels = await (await fetch(new URL('/panels', status))).text();
          const metrics = await (await fetch(new URL('/metrics', status))).text();
          seen.push(panels, metrics);
          expect(panels).toContain('2 processes running');
          expect(panels.match(/<td>zulip-mcp<\/td>/g)).toHaveLength(2);
          expect(panels).toContain('(this process)');
          expect(panels).toContain('Queue of helper@example.test');
          expect(metrics).toMatch(/zmcp_fleet_processes\{[^}]*state="running"[^}]*\} 2/);
        }
      });

      it('hold a token’s long waits to ZMCP_TOKEN_MAX_WAITS across both processes', async () => {
        const connect = async (url: string) => {
          const client = new Client({ name: 'waits', version: '1' });
          await client.connect(
            new StreamableHTTPClientTransport(new URL(url), {
              requestInit: { headers: { authorization: `Bearer ${tokens.bo}` } },
            }),
          );
          return client;
        };
        const bind = async (client: Client, topic: string) => {
          const trigger = realm.sim.realm.sendMessage({
            senderId: boId,
            type: 'stream',
            stream: 'general',
            topic,
            content: '@**Helper Bot** wait',
          });
          const bound = await client.callTool({
            name: 'set_context',
            arguments: { stream: 'general', topic, trigger_message_id: trigger },
          });
          seen.push(JSON.stringify(bound));
          expect(bound.isError).toBeFalsy();
        };
        const onA = await connect(a);
        const onB = await connect(b);
        await bind(onA, 'fleet wait a');
        await bind(onB, 'fleet wait b');
        // The wait on a holds the token's one lease once it has begun (the listening reaction is shown).
        const begun = new Promise<void>((resolve) => {
          const off = realm.sim.onRequest((r) => {
            if (r.method === 'POST' && r.path.endsWith('/reactions')) {
              off();
              resolve();
            }
          });
        });
        const waiting = onA.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
        await begun;
        // (A short timeout: without the fleet-wide count it would wait, and time out, instead of being refused.)
        const refused = await onB.callTool({ name: 'listen', arguments: { timeout_seconds: 1 } });
        seen.push(JSON.stringify(refused));
        expect(refused).toMatchObject({
          isError: true,
          _meta: { 'zmcp/error': { code: 'MCP_TOO_MANY_WAITS' } },
        });
        realm.sim.realm.sendMessage({
          senderId: boId,
          type: 'stream',
          stream: 'general',
          topic: 'fleet wait a',
          content: 'done',
        });
        expect((await waiting).structuredContent).toMatchObject({ status: 'messages' });
        // The lease is released with the wait: process b may wait now (a message answers it at once).
        realm.sim.realm.sendMessage({
          senderId: boId,
          type: 'stream',
          stream: 'general',
          topic: 'fleet wait b',
          content: 'go',
        });
        const again = await onB.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
        seen.push(JSON.stringify(again));
        expect(again.structuredContent).toMatchObject({ status: 'messages' });
        await onA.close();
        await onB.close();
      });
    }

    it('leave no token, API key or secret key in any log, argv, answer, tool output, the audit log or the state', async () => {
      for (const child of children) {
        child.kill('SIGTERM');
        await new Promise<void>((resolve) =>
          child.exitCode !== null ? resolve() : child.once('close', () => resolve()),
        );
      }
      const files: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const entry of await readdir(dir, { withFileTypes: true })) {
          const path = join(dir, entry.name);
          if (entry.isDirectory()) await walk(path);
          else files.push(await readFile(path, 'utf8'));
        }
      };
      await walk(stateDir);
      if (stateUrl !== undefined) {
        // Every row of the state the fleet keeps, whatever the table.
        const tables = await sql<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = 'zmcp'",
          [],
          stateUrl,
        );
        expect(tables.rows.map((r) => r.table_name)).toContain('state');
        for (const { table_name } of tables.rows) {
          const rows = await sql(`SELECT * FROM zmcp."${table_name}"`, [], stateUrl);
          files.push(JSON.stringify(rows.rows));
        }
        expect(files.join('')).toContain('"kind":"token"');
        // Tokens, cursors and all live in the database: the directory holds the audit log only.
        expect(await readdir(stateDir)).toEqual(['audit.log']);
        expect(seen.join('\n')).toMatch(/state="postgres:\/\/zmcp@[^"]*#zmcp"/);
      }
      const haystack = [...seen, ...files].join('\n');
      expect(haystack).toContain('listening url=');
      expect(haystack).toContain('"action":"send_message"');
      const secrets = [
        tokens.ann,
        tokens.bo,
        tokens.late,
        ...[tokens.ann, tokens.bo, tokens.late].map((t) => t.slice('zmcp_0123456789abcdef_'.length)),
        secretKey,
        secretBytes.toString('hex'),
        DB_PASSWORD,
        ...[realm.annId, boId, realm.botId].map((id) => realm.sim.credentials(id).apiKey),
      ];
      for (const secret of secrets)
        expect(haystack.includes(secret), `a secret of ${secret.length} characters leaked`).toBe(false);
    });
  });
}
