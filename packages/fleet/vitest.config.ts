import { packageProject } from '../../vitest.shared.js';

// The tests run against a real PostgreSQL server that the global set-up starts once per run.
export default packageProject(import.meta.dirname, { postgres: true });
