import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

it('binds the bot identity and the realm limits at start-up', () => {
  expect(h.services.identity).toMatchObject({ user_id: h.realm.bot.userId, is_bot: true });
  expect(h.services.maxMessageLength).toBe(10_000);
  expect(h.services.maxFileBytes).toBe(25 * 1024 * 1024);
});
