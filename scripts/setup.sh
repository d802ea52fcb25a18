#!/usr/bin/env bash
# Installs npm packages (from the lock file) when missing or stale, then builds dist/ and the
# prebuilt workflow bundle. Safe to run every time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing npm packages (npm ci) ..." >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
echo "Building (tsc + workflow bundle) ..." >&2
rm -rf dist
npx tsc -p tsconfig.json >&2
node dist/src/cli/bundle-workflows.js >&2
