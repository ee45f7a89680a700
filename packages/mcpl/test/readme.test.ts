// Every ts block of the README runs as written and prints what the README shows. The host
// starts `server.ts` by its relative path, as a reader would: it runs in its own directory.
import { join } from 'node:path';
import { testReadmeExamples } from '../../../test/support/readme.js';

testReadmeExamples(join(import.meta.dirname, '..'), { process: true });
