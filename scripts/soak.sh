#!/usr/bin/env bash
# The soak (soak/, docs/RELIABILITY.md): build, provide the Temporal CLI and the full Temporal server,
# then run it. Arguments go to the runner: `npm run soak -- --users 5 --minutes 2`, `npm run soak -- --help`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh
bash scripts/temporal-cluster.sh --build-only
exec node dist/soak/main.js "$@"
