#!/usr/bin/env bash
# Starts the whole system: Temporal dev server (SQLite under .data/), the demo model unless an LLM
# is configured, the worker, the API and the example MCP servers (children of the worker).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/prepare.sh
exec node dist/src/cli/up.js "$@"
