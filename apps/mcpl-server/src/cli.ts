// The `zulip-mcpl` bin. The shebang is added by the build (tsup banner).
import { main } from './main.js';

const shutdown = new AbortController();
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
  signals++;
  // The first signal shuts down cleanly; a second one means "now".
  if (signals > 1) process.exit(signal === 'SIGINT' ? 130 : 143);
  shutdown.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

main(process.argv.slice(2), process.env, { shutdown: shutdown.signal }).then(
  (code) => {
    // Let stdout drain first: it may carry the last protocol message.
    process.stdout.write('', () => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`zulip-mcpl: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
