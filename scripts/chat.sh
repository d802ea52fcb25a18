#!/usr/bin/env bash
# A terminal chat with the running host (npm start first): npm run chat -- [--role admin|teacher|student] [--session ID]
# Mints a demo token for the role with JWT_SECRET or the dev secret npm start keeps (like npm run token).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/use-node22.sh
[ -f dist/src/cli/chat.js ] || bash scripts/setup.sh
exec node dist/src/cli/chat.js "$@"
