// The `zulip-mcp` bin. The shebang is added by the build (tsup banner).
import { runBin } from '@zmcp/cli';
import { binName } from './config.js';
import { hookMain } from './hook.js';
import { main } from './main.js';
import { auditMain, tokensMain } from './tokens-command.js';

// `zulip-mcp hook`: a Claude Code hook posting the session's lifecycle (the Claude Code plugin).
// `zulip-mcp tokens` and `zulip-mcp audit`: the operator's side of hosting it for an organization.
runBin(binName, (argv, env, context) => {
  if (argv[0] === 'hook') return hookMain(argv.slice(1), env);
  if (argv[0] === 'tokens') return tokensMain(argv.slice(1), env);
  if (argv[0] === 'audit') return auditMain(argv.slice(1), env);
  return main(argv, env, context);
});
