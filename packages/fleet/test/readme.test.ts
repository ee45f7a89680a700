// Every ts block of the README runs as written and prints what the README shows, against a
// database of its own on the tests' PostgreSQL server.
import { join } from 'node:path';
import { testReadmeExamples } from '../../../test/support/readme.js';
import { postgresUrl, sql, uniqueSchema } from './helpers/postgres.js';

testReadmeExamples(join(import.meta.dirname, '..'), {
  env: async () => {
    const database = uniqueSchema('readme');
    await sql(`CREATE DATABASE ${database}`);
    const url = new URL(postgresUrl());
    url.pathname = `/${database}`;
    return { ZULIP_STATE_URL: url.href };
  },
});
