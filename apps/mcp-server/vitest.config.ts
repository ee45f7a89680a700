import { packageProject } from '../../vitest.shared.js';

// Some tests run the server on PostgreSQL (ZULIP_STATE_URL): a throwaway cluster starts once per
// run. test/global-setup.ts builds dist/cli.js when it is missing or older than the sources: the
// spawned-binary tests run it.
export default packageProject(import.meta.dirname, { postgres: true, globalSetup: ['test/global-setup.ts'] });
