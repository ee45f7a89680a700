import { packageProject } from '../../vitest.shared.js';

// The shared event bus is tested on PostgreSQL: a throwaway cluster starts once per run.
export default packageProject(import.meta.dirname, { postgres: true });
