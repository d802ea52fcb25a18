#!/usr/bin/env bash
# Installs npm packages at the versions package-lock.json pins, when missing or stale, then builds
# dist/ and the prebuilt workflow bundle. Safe to run every time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamp=node_modules/.durable-mcp-host-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "Installing npm packages ..." >&2
  # `npm ci` is the first choice. Registries that serve only this platform's native binaries make it
  # refuse the lock (it cannot list the other platforms' optional packages), so fall back to
  # `npm install --no-save`, which installs the same pinned versions and leaves the lock untouched.
  if ! npm ci --no-audit --no-fund --loglevel=error >&2 2>/tmp/durable-mcp-host-npm-ci.log; then
    echo "npm ci refused the lock file (see /tmp/durable-mcp-host-npm-ci.log); installing with npm install --no-save" >&2
    npm install --no-save --no-audit --no-fund --loglevel=error >&2
  fi
  echo "$want" > "$stamp"
fi
# Build only when what goes into dist/ changed since the last build (every start runs this): the
# sources, the compiler settings and the installed packages, by content.
build_stamp=dist/.build-stamp
have_build="$(find src examples tests bench soak -type f \( -name '*.ts' -o -name '*.json' -o -name '*.mjs' \) -print0 2>/dev/null \
  | sort -z | xargs -0 sha256sum | cat - tsconfig.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [ -f "$build_stamp" ] && [ "$(cat "$build_stamp")" = "$have_build" ] && [ -f dist/src/workflow-bundle.js ]; then
  exit 0
fi
echo "Building (tsc + workflow bundle) ..." >&2
rm -rf dist
npx tsc -p tsconfig.json >&2
node dist/src/cli/bundle-workflows.js >/dev/null
echo "$have_build" > "$build_stamp"

