// The `zulip-agent` bin. The shebang is added by the build (tsup banner).
import { runBin } from '@zmcp/cli';
import { binName } from './config.js';
import { main } from './main.js';

runBin(binName, main);
