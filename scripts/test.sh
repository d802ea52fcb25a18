#!/usr/bin/env bash
# The whole test suite: install, build, lint, then every jest suite (unit, activity, API, end to
# end against a real Temporal dev server, replay). Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
TEMPORAL_CLI="$(bash scripts/ensure-temporal.sh)"
export TEMPORAL_CLI
echo "Linting ..." >&2
npx eslint . --max-warnings=0
npx jest --ci "$@"
