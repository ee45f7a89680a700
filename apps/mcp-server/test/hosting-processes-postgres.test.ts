// Two built `zulip-mcp --http` processes with per-person tokens sharing one PostgreSQL database
// (ZULIP_STATE_URL, the tests' real server): `zulip-mcp tokens create/revoke` on it, a revoked or
// expired token refused on both processes, nothing secret anywhere (the suite is in hosted-fleet.ts).
import { dropAfterAll } from '../../../test/support/postgres.js';
import { describeHostedFleet } from './hosted-fleet.js';

dropAfterAll();
describeHostedFleet('postgres');
