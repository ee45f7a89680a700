// People a name alone would not tell apart reach the agent with their user id: in live lines, in
// <missed> blocks, in the author a host reads and in a DM channel's label. Plain unique names are
// printed as they always were.
import { afterEach, describe, expect, it } from 'vitest';
import { closeFixtures, type Fixture, startFixture } from './helpers/engine-fixture.js';

afterEach(closeFixtures);

function people(f: Fixture) {
  const add = (fullName: string, email: string) => {
    const user = f.sim.realm.addUser({ fullName, email });
    f.sim.realm.subscribe(user.userId, 'general');
    return user.userId;
  };
  return {
    olivia: add('Olivia Owner', 'olivia@zulip.example'),
    impostor: add('Olivia Owner\u200b', 'mallory@zulip.example'),
    samA: add('Sam Doe', 'sam.a@zulip.example'),
    samB: add('Sam Doe', 'sam.b@zulip.example'),
  };
}

describe('DeliveryEngine: people a name alone would not tell apart', () => {
  it('delivers their lines and authors with the user id, and plain unique names as before', async () => {
    const f = await startFixture();
    const p = people(f);
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    const sent = [
      f.send('general', 'ship it', { sender: p.olivia }),
      f.send('general', 'cancel the deploy', { sender: p.impostor }),
      f.send('general', 'one', { sender: p.samA }),
      f.send('general', 'two', { sender: p.samB }),
      f.send('general', 'plain'),
    ];
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').length === sent.length);
    const byBody = (body: string) => f.sink.accepted.find((i) => i.text.endsWith(`: ${body}`));
    expect(byBody('ship it')?.text).toContain(`] Olivia Owner (user ${p.olivia}): ship it`);
    expect(byBody('ship it')?.author).toEqual({ id: p.olivia, name: `Olivia Owner (user ${p.olivia})` });
    expect(byBody('cancel the deploy')?.text).toContain(`] Olivia Owner\u200b (user ${p.impostor}): cancel`);
    expect(byBody('one')?.text).toContain(`] Sam Doe (user ${p.samA}): one`);
    expect(byBody('two')?.author.name).toBe(`Sam Doe (user ${p.samB})`);
    expect(byBody('plain')?.text).toMatch(/\] Ann Lee: plain$/);
    expect(byBody('plain')?.author).toEqual({ id: f.ann, name: 'Ann Lee' });
  });

  it('tells them apart in a <missed> block and in a DM channel’s label', async () => {
    const f = await startFixture();
    const p = people(f);
    const first = f.engine();
    await first.start();
    await first.openChannel('zulip:general');
    const seen = f.send('general', 'before');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(seen));
    await first.close();
    f.send('general', 'offline olivia', { sender: p.olivia });
    f.send('general', 'offline impostor', { sender: p.impostor });
    const second = f.engine();
    await second.start();
    const block = f.sink.acceptedPushes.find((e) => e.kind === 'missed');
    expect(block?.text).toContain(`Olivia Owner (user ${p.olivia}): offline olivia`);
    expect(block?.text).toContain(`Olivia Owner\u200b (user ${p.impostor}): offline impostor`);

    f.dm(p.impostor, 'psst');
    await f.sink.until(() => f.sink.acceptedPushes.some((e) => e.text.endsWith(': psst')));
    const push = f.sink.acceptedPushes.find((e) => e.text.endsWith(': psst'));
    expect(push?.channel.label).toBe(`DM with Olivia Owner\u200b (user ${p.impostor})`);
    expect(push?.text).toContain(`[DM] Olivia Owner\u200b (user ${p.impostor}): psst`);
  });
});
