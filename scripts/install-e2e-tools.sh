#!/usr/bin/env bash
# Installs the agent CLIs the slow end-to-end tests (`pnpm test:e2e`) run for real, into a cache
# directory outside the repository, if they are not there yet. The tests install nothing
# themselves: they look for the CLIs where this script puts them.
#
#   scripts/install-e2e-tools.sh            # into ${ZMCP_E2E_TOOLS_DIR:-${TMPDIR:-/tmp}/zmcp-e2e-tools}
#
# Pinned: Claude Code 2.1.332 from npm (its native binary comes as an optional platform package).
# Prints the path of the installed `claude` on its last line.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.332
TOOLS_DIR="${ZMCP_E2E_TOOLS_DIR:-${TMPDIR:-/tmp}/zmcp-e2e-tools}"
PREFIX="$TOOLS_DIR/claude-code-$CLAUDE_CODE_VERSION"
CLAUDE="$PREFIX/node_modules/.bin/claude"

installed_version() {
  # `claude --version` prints "2.1.332 (Claude Code)"; the offline switches keep it off the network.
  DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$CLAUDE" --version 2>/dev/null |
    awk '{print $1}' || true
}

if [ ! -x "$CLAUDE" ] || [ "$(installed_version)" != "$CLAUDE_CODE_VERSION" ]; then
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  # The package's postinstall (install.cjs) puts the native binary of the platform package over
  # its bin/claude.exe placeholder; it needs nothing beyond npm's own registry.
  npm install --no-audit --no-fund --no-save --prefix "$PREFIX" \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2
  if [ "$(installed_version)" != "$CLAUDE_CODE_VERSION" ]; then
    echo "install-e2e-tools: $CLAUDE does not answer --version with $CLAUDE_CODE_VERSION" >&2
    exit 1
  fi
fi
echo "$CLAUDE"
