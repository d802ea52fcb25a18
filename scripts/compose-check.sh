#!/usr/bin/env bash
# Validates a compose file as `docker compose config` does, with no Docker engine: tools/compose-check
# loads it with compose-go (the library Docker Compose itself uses: schema, interpolation,
# references between services) and prints the normalized project as JSON. Built with Go into
# .tools/ on first use (and again when its source changes).
#   bash scripts/compose-check.sh [-env KEY=VALUE ...] docker-compose.yml
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/tools/compose-check"
command -v go >/dev/null 2>&1 || { echo "compose-check needs Go (https://go.dev/dl/) to build" >&2; exit 2; }
stamp="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"
bin="$root/.tools/compose-check/compose-check-$stamp"
if [ ! -x "$bin" ]; then
  echo "Building compose-check (compose-go) into .tools/compose-check ..." >&2
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && go build -o "$bin.tmp" . && mv "$bin.tmp" "$bin") >&2
fi
exec "$bin" "$@"
