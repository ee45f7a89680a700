// Every ts block of the README runs as written and prints what the README shows.
import { join } from 'node:path';
import { testReadmeExamples } from '../../../test/support/readme.js';

testReadmeExamples(join(import.meta.dirname, '..'));
