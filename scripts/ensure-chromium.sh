#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests (playwright-core drives it; its own browser
# download does not work here). Uses CHROMIUM_PATH or one on PATH, else installs Debian's `chromium`
# with apt (root only). Fails with a message saying what to do when it cannot.
set -euo pipefail
if [ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ]; then echo "$CHROMIUM_PATH"; exit 0; fi
for name in chromium chromium-browser google-chrome; do
  if path="$(command -v "$name")"; then echo "$path"; exit 0; fi
done
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
apt_install chromium /tmp/durable-mcp-host-chromium.log || true
if path="$(command -v chromium)"; then echo "$path"; exit 0; fi
echo "No Chromium found for the browser tests: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH (apt's log, if it ran: /tmp/durable-mcp-host-chromium.log)" >&2
exit 1
