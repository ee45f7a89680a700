// Every ts block of the README runs as written and prints what the README shows, against a
// database of its own on the tests' PostgreSQL server.
import { join } from 'node:path';
import { dropAfterAll, freshDatabase } from '../../../test/support/postgres.js';
import { testReadmeExamples } from '../../../test/support/readme.js';

dropAfterAll();

testReadmeExamples(join(import.meta.dirname, '..'), {
  env: async () => ({ ZULIP_STATE_URL: await freshDatabase() }),
});
