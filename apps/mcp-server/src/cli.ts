// The `zulip-mcp` bin. The shebang is added by the build (tsup banner).
import { runBin } from '@zmcp/cli';
import { binName } from './config.js';
import { hookMain } from './hook.js';
import { main } from './main.js';

// `zulip-mcp hook`: a Claude Code hook posting the session's lifecycle (the Claude Code plugin).
runBin(binName, (argv, env, context) =>
  argv[0] === 'hook' ? hookMain(argv.slice(1), env) : main(argv, env, context),
);
