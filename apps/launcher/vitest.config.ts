import { packageProject } from '../../vitest.shared.js';

// Some tests keep the trigger record in PostgreSQL (ZULIP_STATE_URL): a throwaway cluster starts
// once per run. test/global-setup.ts builds zulip-mcp (the server the stub agents start) when its
// bin is missing or stale.
export default packageProject(import.meta.dirname, { postgres: true, globalSetup: ['test/global-setup.ts'] });
