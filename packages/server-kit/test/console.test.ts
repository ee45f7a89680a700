// The operator's console: the page, its guard (loopback Host, bearer token, the one-time ?token=
// cookie), escaping, long work, and /metrics read back with a Prometheus text-format parser.
import { request } from 'node:http';
import { Counter } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetrics } from '../../../test/support/console.js';
import { html, isServerKitError, OperatorConsole } from '../src/index.js';

const TOKEN = 'status-token-0123456789abcdef';
const opened: OperatorConsole[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

function makeConsole(stderr?: { write(text: string): unknown; isTTY?: boolean }, now?: () => number) {
  const c = new OperatorConsole({
    bin: 'zulip-test',
    version: '1.2.3',
    labels: { realm: 'chat.example.test', bot: 'helper@example.test' },
    stderr,
    now,
  });
  opened.push(c);
  return c;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw GET, so the Host header can be anything (fetch would not let a test set it). */
function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('OperatorConsole', () => {
  it('serves the page with its panels escaped, under a strict Content-Security-Policy', async () => {
    const c = makeConsole();
    const topic = '<img src=x onerror=alert(1)>';
    c.addPanel({ id: 'topics', title: 'Topics', render: () => html`<p>${topic}</p>` });
    const url = await c.listen({ port: 0 });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await get(url);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).toContain('helper@example.test');
    const panels = await get(`${url}panels`);
    expect(panels.body).toContain('<section id="topics"><h2>Topics</h2>');
    expect((await get(`${url}console.js`)).headers['content-type']).toContain('javascript');
    expect((await get(`${url}nowhere`)).status).toBe(404);
  });

  it('shows a panel that throws as failed, and the rest of the page still', async () => {
    const c = makeConsole();
    c.addPanel({
      id: 'broken',
      title: 'Broken',
      render: () => {
        throw Object.assign(new Error('no'), { code: 'SOME_CODE' });
      },
    });
    expect(c.renderPanels()).toContain('This panel failed to render (SOME_CODE)');
    expect(c.renderPanels()).toContain('<section id="process">');
  });

  it('refuses a Host header that is not loopback while bound to loopback', async () => {
    const c = makeConsole();
    const url = await c.listen({ port: 0 });
    expect((await get(url, { host: 'evil.example' })).status).toBe(403);
    expect((await get(url, { host: 'localhost' })).status).toBe(200);
  });

  it('requires the token when one is set: bearer, or the cookie /?token= sets; never shows it', async () => {
    const c = makeConsole();
    const url = await c.listen({ port: 0, token: TOKEN });
    expect(url).not.toContain(TOKEN);
    const refused = await get(url);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('Bearer');
    expect((await get(`${url}metrics`, { authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401);
    const page = await get(url, { authorization: `Bearer ${TOKEN}` });
    expect(page.status).toBe(200);
    expect(page.body).not.toContain(TOKEN);
    expect((await get(`${url}?token=wrong`)).status).toBe(401);
    const opening = await get(`${url}?token=${TOKEN}`);
    expect(opening.status).toBe(303);
    expect(opening.headers.location).toBe('/');
    const cookie = String(opening.headers['set-cookie']).split(';')[0] as string;
    expect(opening.headers['set-cookie']?.[0]).toContain('HttpOnly');
    expect((await get(`${url}panels`, { cookie })).status).toBe(200);
    const metrics = await get(`${url}metrics`, { authorization: `Bearer ${TOKEN}` });
    expect(metrics.body).not.toContain(TOKEN);
  });

  it('will not listen beyond loopback without a token', async () => {
    const c = makeConsole();
    const err = await c.listen({ port: 0, host: '0.0.0.0' }).catch((e: unknown) => e);
    expect(isServerKitError(err, 'SERVER_KIT_INVALID_OPTIONS')).toBe(true);
  });

  it('reports a port it cannot bind as SERVER_KIT_LISTEN_FAILED', async () => {
    const first = makeConsole();
    const url = await first.listen({ port: 0 });
    const err = await makeConsole()
      .listen({ port: Number(new URL(url).port) })
      .catch((e: unknown) => e);
    expect(isServerKitError(err, 'SERVER_KIT_LISTEN_FAILED')).toBe(true);
  });

  it('serves /metrics in the Prometheus text format, every series labelled by realm and bot', async () => {
    const c = makeConsole();
    const calls = new Counter({
      name: 'zmcp_test_calls_total',
      help: 'Calls.',
      labelNames: ['tool'],
      registers: [c.metrics],
    });
    calls.inc({ tool: 'send_message' }, 2);
    c.progress('catch-up', 'catch-up sweep');
    const url = await c.listen({ port: 0 });
    const res = await get(`${url}metrics`);
    expect(res.headers['content-type']).toContain('text/plain');
    const families = parseMetrics(res.body);
    expect(families.get('zmcp_test_calls_total')?.samples).toEqual([
      { labels: { tool: 'send_message', realm: 'chat.example.test', bot: 'helper@example.test' }, value: 2 },
    ]);
    expect(families.get('zmcp_long_work_active')?.samples[0]).toMatchObject({
      labels: { kind: 'catch-up', realm: 'chat.example.test', bot: 'helper@example.test' },
      value: 1,
    });
    expect(families.get('zmcp_process_start_time_seconds')?.samples[0]?.labels).toMatchObject({
      bin: 'zulip-test',
      version: '1.2.3',
    });
  });

  it('shows long work on the page, and as lines on stderr only when it is a terminal', () => {
    let now = 1_000_000;
    const lines: string[] = [];
    const tty = makeConsole({ write: (t) => lines.push(t), isTTY: true }, () => now);
    const task = tty.progress('catch-up', 'catch-up sweep');
    task.update({ done: 1000, total: 4000, unit: 'messages' });
    expect(tty.renderPanels()).toContain('1000/4000 messages (25%)');
    expect(tty.renderPanels()).toContain('<progress max="4000" value="1000">');
    now += 200;
    task.update({ done: 2000, total: 4000, unit: 'messages' }); // within a second: no line
    now += 1000;
    task.end();
    task.update({ done: 1, total: 4000 });
    expect(lines).toEqual([
      'zulip-test: catch-up sweep: 1000/4000 messages (25%)\n',
      'zulip-test: catch-up sweep: done (2000/4000 messages (50%), 1s)\n',
    ]);
    expect(tty.renderPanels()).toMatch(/<span class="ok">done<\/span> after 1s/);

    const piped: string[] = [];
    const notTty = makeConsole({ write: (t) => piped.push(t), isTTY: false });
    const other = notTty.progress('history-read', 'history read');
    other.update({ done: 5 });
    other.end('failed');
    expect(piped).toEqual([]);
    expect(notTty.renderPanels()).toContain('<span class="bad">failed</span>');
  });

  it('says this process runs alone until a fleet fills its view', () => {
    const c = makeConsole();
    expect(c.renderPanels()).toContain('this process runs alone');
    c.fleet = {
      processes: [{ id: 'a' }, { id: 'b' }],
      queueOwners: [{ bot: 'helper@example.test', owner: 'b' }],
    };
    expect(c.renderPanels()).toContain('owner: b');
  });

  it('lists the fleet’s processes, running and gone, escaped, marking this one', () => {
    const t = Date.parse('2030-01-01T00:10:00Z');
    const c = makeConsole(undefined, () => t);
    c.fleet = {
      processes: [
        {
          id: 'a',
          bin: 'zulip-mcp',
          pid: 11,
          host: 'web-1',
          startedAt: '2030-01-01T00:00:00.000Z',
          lastSeen: '2030-01-01T00:09:58.000Z',
          self: true,
        },
        {
          id: 'b',
          bin: 'zulip-mcp',
          pid: 12,
          host: '<img src=x>',
          startedAt: '2030-01-01T00:01:00.000Z',
          lastSeen: '2030-01-01T00:05:00.000Z',
          gone: true,
        },
      ],
      queueOwners: [{ bot: 'helper@example.test', owner: 'pid 11 on web-1' }],
    };
    const panels = c.renderPanels();
    expect(panels).toContain('<dd>1 processes running, 1 gone</dd>');
    expect(panels).toContain(
      '<td>zulip-mcp</td><td>pid 11 on web-1 (this process)</td><td>2030-01-01T00:00:00.000Z</td><td>2s ago</td><td><span class="ok">running</span></td>',
    );
    expect(panels).toContain(
      '<td>pid 12 on &lt;img src=x&gt;</td><td>2030-01-01T00:01:00.000Z</td><td>5m 0s ago</td><td><span class="bad">gone</span></td>',
    );
    expect(panels).not.toContain('<img');
    expect(panels).toContain('<dt>Queue of helper@example.test</dt><dd>owner: pid 11 on web-1</dd>');
  });

  it('runs its refreshers before answering, and redacts what it serves', async () => {
    const c = new OperatorConsole({
      bin: 'zulip-mcp',
      labels: { realm: 'chat.example.com', bot: 'helper@example.test' },
      redact: (text) => text.replaceAll('s3cret-person-key', '[REDACTED]'),
    });
    let reads = 0;
    c.addRefresher(async () => {
      reads += 1;
      c.fleet = { processes: [{ id: 'x', bin: 'zulip-mcp', host: `h${reads}` }], queueOwners: [] };
    });
    c.addPanel({ id: 'leak', title: 'Leak', render: () => html`<p>s3cret-person-key</p>` });
    const url = await c.listen({ port: 0 });
    try {
      const first = await (await fetch(new URL('/panels', url))).text();
      const second = await (await fetch(new URL('/panels', url))).text();
      expect(first).toContain('on h1');
      expect(second).toContain('on h2');
      expect(second).toContain('<p>[REDACTED]</p>');
      expect(second).not.toContain('s3cret');
    } finally {
      await c.close();
    }
  });
});
