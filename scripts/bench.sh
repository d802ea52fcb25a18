#!/usr/bin/env bash
# The benchmark baseline (not a test): build, provide the Temporal CLI, then run every benchmark
# once and print the tables. Results also go to .data/bench/latest.json (git-ignored).
# Arguments go to the runner: `npm run bench -- --help`, `npm run bench -- --quick`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh
exec node dist/bench/run.js "$@"
