#!/usr/bin/env bash
# The whole test suite: install, build, lint, then every jest suite (unit, activity, API, workflow, end
# to end against a real Temporal dev server, replay). Extra arguments go to jest.
# The last line is the summary CI reads, derived from jest's JSON results: `N passed, N failed`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh
CHROMIUM_PATH="$(bash scripts/ensure-chromium.sh)"
export CHROMIUM_PATH
# The HTTP contract fuzzer (tests/e2e/contract-fuzz.e2e.test.ts): the pinned schemathesis from PyPI,
# installed into .tools/ on first use, before jest rather than inside a test's timeout.
SCHEMATHESIS_CLI="$(bash scripts/ensure-schemathesis.sh)"
export SCHEMATHESIS_CLI
# The full Temporal server on PostgreSQL (tests/e2e/scale-out-cluster.e2e.test.ts), built from Go
# modules into .tools/ on first use: minutes, so before jest rather than inside a test's timeout.
bash scripts/temporal-cluster.sh --build-only
# The soak's replicas and workers run with jemalloc, as the image does (decision 0046, soak/allocator.ts).
if lib="$(bash scripts/ensure-jemalloc.sh)"; then export SOAK_JEMALLOC="$lib"; fi
echo "Linting ..." >&2
npx eslint . --max-warnings=0
results=.data/test-results.json
mkdir -p .data
rm -f "$results"
status=0
# TEST_CPU_HOG=1: jest runs while scripts/cpu-hog.mjs keeps every core busy (docs/RELIABILITY.md), so a
# test that depends on timing rather than on conditions shows it.
hog=()
if [[ "${TEST_CPU_HOG:-}" == 1 ]]; then hog=(node scripts/cpu-hog.mjs --); fi
${hog[@]+"${hog[@]}"} npx jest --ci --json --outputFile="$results" "$@" || status=$?
node scripts/test-summary.mjs "$results" || status=1
exit "$status"
