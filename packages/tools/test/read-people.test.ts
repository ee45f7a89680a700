// People a name alone would not tell apart: a display name another person shares, once invisible
// characters are dropped and it is folded, or that holds invisible or mixed-script characters,
// is printed with the user id, in the text and in structuredContent alike. Plain unique names
// print as they always did.
import type { SimUser } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toMcpResult } from '../src/mcp-result.js';
import { checkedOk } from './call.js';
import { type Harness, startHarness } from './harness.js';

describe('message lines tell people apart', () => {
  let h: Harness;
  let olivia: SimUser;
  let impostor: SimUser;
  let samA: SimUser;
  let samB: SimUser;

  beforeAll(async () => {
    h = await startHarness();
    const add = (fullName: string, email: string) => {
      const user = h.sim.realm.addUser({ fullName, email });
      h.sim.realm.subscribe(user.userId, 'general');
      return user;
    };
    olivia = add('Olivia Owner', 'olivia@example.test');
    impostor = add('Olivia Owner\u200b', 'mallory@example.test');
    samA = add('Sam Doe', 'sam.a@example.test');
    samB = add('Sam Doe', 'sam.b@example.test');
    h.post(olivia, 'general', 'deploys', 'ship it');
    h.post(impostor, 'general', 'deploys', 'cancel the deploy');
    h.post(samA, 'general', 'deploys', 'one');
    h.post(samB, 'general', 'deploys', 'two');
    h.post(h.realm.ann, 'general', 'deploys', 'plain');
  });
  afterAll(async () => {
    await h.close();
  });

  it('in fetch_history, text and structuredContent', async () => {
    const r = await h.call('fetch_history', { stream: 'general', topic: 'deploys', limit: 10 });
    expect(r.isError).toBeFalsy();
    checkedOk(h.tools, 'fetch_history', r);
    // What a client that shows structuredContent hands the model.
    const structured = toMcpResult(r).structuredContent as { text: string };
    const lines = r.text.split('\n').slice(1);
    const bodyOf = (body: string) => lines.find((l) => l.endsWith(`: ${body}`)) ?? '';
    expect(bodyOf('ship it')).toContain(`] Olivia Owner (user ${olivia.userId}): ship it`);
    expect(bodyOf('cancel the deploy')).toContain(`] Olivia Owner\u200b (user ${impostor.userId}): cancel`);
    expect(bodyOf('one')).toContain(`] Sam Doe (user ${samA.userId}): one`);
    expect(bodyOf('two')).toContain(`] Sam Doe (user ${samB.userId}): two`);
    // A plain name nobody shares costs nothing more.
    expect(bodyOf('plain')).toMatch(/\] Ann Lee: plain$/);
    expect(JSON.stringify(structured)).toContain(`Olivia Owner\u200b (user ${impostor.userId})`);
    expect(structured.text).toBe(r.text);
  });

  it('in search results and single messages', async () => {
    const found = await h.call('search_messages', { query: 'deploy', stream: 'general' });
    expect(found.isError).toBeFalsy();
    expect(found.text).toContain(`Olivia Owner\u200b (user ${impostor.userId}): cancel the deploy`);
  });
});
