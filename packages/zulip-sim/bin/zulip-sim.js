#!/usr/bin/env node
// The `zulip-sim` bin. It lives in the source tree, so installing the workspace links it before
// anything is built; the program itself is the build output, dist/cli.js.
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/cli.js', import.meta.url);
import(cli.href).catch((err) => {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes(fileURLToPath(cli))) {
    process.stderr.write('zulip-sim: dist/cli.js is missing; run `pnpm build` in the zmcp checkout first\n');
    process.exit(1);
  }
  throw err;
});
