#!/usr/bin/env bash
# The soak (soak/, docs/RELIABILITY.md): build, provide the Temporal CLI and the full Temporal server,
# then run it. Arguments go to the runner: `npm run soak -- --users 5 --minutes 2`, `npm run soak -- --help`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh
bash scripts/temporal-cluster.sh --build-only
# The replicas and workers run with jemalloc, as the image does (decision 0046); without it the soak
# says so in its report and runs on glibc's malloc.
if lib="$(bash scripts/ensure-jemalloc.sh)"; then export SOAK_JEMALLOC="$lib"; fi
exec node dist/soak/main.js "$@"
