#!/usr/bin/env bash
# Installs the system packages the tests need and Node cannot bring: Debian's `postgresql` (the
# tests start a throwaway PostgreSQL cluster of their own, test/setup/postgres.ts) and Debian's
# `chromium` (the status-page tests drive it headless with playwright-core, which downloads no
# browser). Idempotent: what is there already is left alone. Installs only as root (apt-get);
# otherwise it says what is missing and how to install it, and fails.
#
#   scripts/system-deps.sh
set -euo pipefail

have_postgres() {
  # The tests use the server ZMCP_TEST_PG_URL names, when set: nothing to install.
  if [ -n "${ZMCP_TEST_PG_URL:-}" ]; then return 0; fi
  # What the tests' set-up looks for: ZMCP_PG_BIN, Debian's versioned directory, or the PATH.
  if [ -n "${ZMCP_PG_BIN:-}" ] && [ -x "$ZMCP_PG_BIN/initdb" ] && [ -x "$ZMCP_PG_BIN/postgres" ]; then
    return 0
  fi
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then return 0; fi
  done
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

have_chromium() {
  # What test/support/console.ts looks for: ZMCP_CHROMIUM, or Debian's chromium.
  if [ -n "${ZMCP_CHROMIUM:-}" ] && [ -x "$ZMCP_CHROMIUM" ]; then return 0; fi
  [ -x /usr/bin/chromium ] || [ -x /usr/bin/chromium-browser ]
}

missing=()
have_postgres || missing+=(postgresql)
have_chromium || missing+=(chromium)

if [ ${#missing[@]} -eq 0 ]; then
  echo "system-deps: PostgreSQL and chromium are installed; nothing to do"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing ${missing[*]}; install as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "system-deps: installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if ! have_postgres; then
  echo "system-deps: apt-get installed postgresql, but initdb and postgres are still not found" >&2
  exit 1
fi
if ! have_chromium; then
  echo "system-deps: apt-get installed chromium, but /usr/bin/chromium is still not found" >&2
  exit 1
fi
echo "system-deps: installed ${missing[*]}"
