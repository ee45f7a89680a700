import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedOk } from './call.js';
import { type Harness, startHarness } from './harness.js';

// What a list prints can be passed back: a name quoted because it holds a delimiter, or with its
// `<` written `&lt;`, names the same stream or person as the name itself.

describe('printed names round-trip', () => {
  let h: Harness;
  const odd = 'ops (x): y <z>';
  const person = 'Olivia Owner: FORGED';
  beforeAll(async () => {
    h = await startHarness();
    const { ann, bot } = h.realm;
    h.sim.realm.addStream({ name: odd, subscribers: [ann.userId, bot.userId] });
    h.post(ann, odd, 'a [bracketed] topic', 'hello there');
    h.sim.realm.addUser({ fullName: person, email: 'olivia@example.test' });
  });
  afterAll(async () => {
    await h.close();
  });

  /** The quoted form a list line shows for `name`. */
  function printedIn(text: string, name: string): string {
    const line = text
      .split('\n')
      .find((l) => l.includes('id ') && l.includes('"') && l.includes(name.slice(0, 3)));
    const match = /"(?:[^"\\]|\\.)*"/.exec(line ?? '');
    if (match === null) throw new Error(`${name} is not printed quoted:\n${text}`);
    return match[0];
  }

  it('accepts a stream name as list_streams prints it', async () => {
    const listed = checkedOk(h.tools, 'list_streams', await h.call('list_streams', { name_contains: 'ops' }));
    const printed = printedIn(listed.text, odd);
    expect(printed).toBe('"ops (x): y \\u003cz>"');
    const topics = checkedOk(
      h.tools,
      'get_stream_topics',
      await h.call('get_stream_topics', { stream: printed }),
    );
    expect(topics.text).toContain('a [bracketed] topic');
    const history = checkedOk(h.tools, 'fetch_history', await h.call('fetch_history', { stream: printed }));
    expect(history.text).toContain('hello there');
  });

  it('accepts a person as find_user prints them, for reads and for writes', async () => {
    const found = checkedOk(h.tools, 'find_user', await h.call('find_user', { query: 'Olivia' }));
    const printed = printedIn(found.text, person);
    expect(printed).toBe(JSON.stringify(person));
    const again = checkedOk(h.tools, 'find_user', await h.call('find_user', { query: printed }));
    expect(again.structured.matched_by).toBe('name');
    const profile = checkedOk(
      h.tools,
      'get_user_profile',
      await h.call('get_user_profile', { user: printed }),
    );
    expect(profile.text).toContain('olivia@example.test');
    const sent = checkedOk(h.tools, 'send_dm', await h.call('send_dm', { to: [printed], content: 'hi' }));
    expect(sent.structured.recipient_ids).toEqual([again.structured.user_ids].flat());
  });
});
