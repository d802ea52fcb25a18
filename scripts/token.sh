#!/usr/bin/env bash
# Mints a dev token for a demo role: npm run -s token -- --role admin|teacher|student [--ttl 3600]
# Uses JWT_SECRET, or the dev secret `npm start` keeps in its data directory (DATA_DIR, default .data).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/use-node22.sh
secret_file="${DATA_DIR:-.data}/dev-jwt-secret"
if [ -z "${JWT_SECRET:-}" ]; then
  if [ ! -f "$secret_file" ]; then
    echo "No JWT_SECRET and no $secret_file yet: run npm start once (it creates the dev secret)." >&2
    exit 2
  fi
  JWT_SECRET="$(cat "$secret_file")"
fi
[ -f dist/src/cli/mint-token.js ] || bash scripts/setup.sh
JWT_SECRET="$JWT_SECRET" exec node dist/src/cli/mint-token.js "$@"
