import { credentialProblem } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { startDemoRealm } from '../src/index.js';

describe('startDemoRealm', () => {
  it('starts a seeded realm on loopback whose bot credentials work', async () => {
    const demo = await startDemoRealm('server-kit demo');
    try {
      expect(demo.site).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(demo.messageCount).toBeGreaterThan(0);
      const auth = Buffer.from(`${demo.email}:${demo.apiKey}`).toString('base64');
      const response = await fetch(`${demo.site}/api/v1/users/me`, {
        headers: { authorization: `Basic ${auth}` },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ result: 'success', is_bot: true });
      // Issued the way Zulip issues keys, so the servers' own key check lets it through.
      expect(credentialProblem('apiKey', demo.apiKey)).toBeUndefined();
      // Its people, and a message posted as one of them, which the bot sees.
      expect(demo.people.length).toBeGreaterThan(1);
      expect(demo.people).not.toContain(demo.botUserId);
      const id = demo.post({
        senderId: demo.people[0] as number,
        stream: 'general',
        topic: 't',
        content: 'hi',
      });
      const read = await fetch(`${demo.site}/api/v1/messages/${id}?apply_markdown=false`, {
        headers: { authorization: `Basic ${auth}` },
      });
      expect(await read.json()).toMatchObject({ message: { sender_id: demo.people[0], content: 'hi' } });
    } finally {
      await demo.close();
    }
    // The realm is gone once closed.
    await expect(fetch(`${demo.site}/api/v1/server_settings`)).rejects.toThrow();
  });
});
