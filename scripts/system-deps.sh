#!/usr/bin/env bash
# Installs the system packages the tests need and Node cannot bring: Debian's `postgresql` (the
# tests start a throwaway PostgreSQL cluster of their own, test/setup/postgres.ts). Idempotent:
# what is there already is left alone. Installs only as root (apt-get); otherwise it says what is
# missing and how to install it, and fails.
#
#   scripts/system-deps.sh
set -euo pipefail

have_postgres() {
  # What the tests' set-up looks for: ZMCP_PG_BIN, Debian's versioned directory, or the PATH.
  if [ -n "${ZMCP_PG_BIN:-}" ] && [ -x "$ZMCP_PG_BIN/initdb" ] && [ -x "$ZMCP_PG_BIN/postgres" ]; then
    return 0
  fi
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then return 0; fi
  done
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

if [ -n "${ZMCP_TEST_PG_URL:-}" ]; then
  echo "system-deps: the tests use the PostgreSQL server ZMCP_TEST_PG_URL names; nothing to install"
  exit 0
fi

if have_postgres; then
  echo "system-deps: PostgreSQL server binaries are installed; nothing to do"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: PostgreSQL server binaries are missing; install them as root: apt-get install -y postgresql" >&2
  exit 1
fi

echo "system-deps: installing Debian's postgresql (the tests start a throwaway cluster of their own)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
if ! have_postgres; then
  echo "system-deps: apt-get installed postgresql, but initdb and postgres are still not found" >&2
  exit 1
fi
echo "system-deps: installed $(ls -d /usr/lib/postgresql/*/bin | tail -n 1)"
