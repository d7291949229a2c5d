#!/usr/bin/env bash
# Start the local PostgreSQL server the store tests use, if it is not running already.
set -euo pipefail
if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  exit 0
fi
if command -v pg_ctlcluster >/dev/null 2>&1; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
fi
for _ in $(seq 1 30); do
  pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null && exit 0
  sleep 1
done
echo "PostgreSQL is not reachable on 127.0.0.1:5432 (set RAGSHIELD_SKIP_POSTGRES=1 to run without it)" >&2
[ "${RAGSHIELD_SKIP_POSTGRES:-0}" = "1" ] || exit 1
