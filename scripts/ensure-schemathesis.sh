#!/usr/bin/env bash
# Prints the path of the schemathesis CLI for the HTTP contract fuzz test, installing the pinned
# release (scripts/schemathesis-requirements.txt: schemathesis and its dependencies, exact versions)
# from PyPI into .tools/schemathesis-venv on first use. A venv of its own, beside the Temporal CLI's
# .tools/venv, so that neither install can move the other's dependencies.
# $SCHEMATHESIS_CLI, when set, is used as is (it must report the pinned version).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/scripts/schemathesis-requirements.txt"
version="$(sed -n 's/^schemathesis==//p' "$requirements")"
venv="$root/.tools/schemathesis-venv"

pinned() { [ -n "${1:-}" ] && [ -x "$1" ] && [ "$("$1" --version 2>/dev/null)" = "schemathesis, version $version" ]; }

if [ -n "${SCHEMATHESIS_CLI:-}" ]; then
  if pinned "$SCHEMATHESIS_CLI"; then echo "$SCHEMATHESIS_CLI"; exit 0; fi
  echo "SCHEMATHESIS_CLI=$SCHEMATHESIS_CLI is not schemathesis $version" >&2
  exit 1
fi
if pinned "$venv/bin/schemathesis"; then echo "$venv/bin/schemathesis"; exit 0; fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "The contract fuzz test needs Python 3 (3.10 or later) with venv and pip to install schemathesis $version from PyPI." >&2
  exit 1
fi
echo "Installing schemathesis $version (PyPI) into .tools/schemathesis-venv ..." >&2
rm -rf "$venv"
python3 -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --requirement "$requirements" >&2
if pinned "$venv/bin/schemathesis"; then echo "$venv/bin/schemathesis"; exit 0; fi
echo "pip installed schemathesis, but $venv/bin/schemathesis does not report version $version" >&2
exit 1
