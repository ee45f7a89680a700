import { packageProject } from '../../vitest.shared.js';

// Some tests run the server on PostgreSQL (ZULIP_STATE_URL): a throwaway cluster starts once per run.
export default packageProject(import.meta.dirname, { postgres: true });
