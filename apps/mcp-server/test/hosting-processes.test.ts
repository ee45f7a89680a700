// Two built `zulip-mcp --http` processes with per-person tokens sharing one state directory
// (the suite is in hosted-fleet.ts; hosting-processes-postgres.test.ts runs it on PostgreSQL).
import { describeHostedFleet } from './hosted-fleet.js';

describeHostedFleet('files');
