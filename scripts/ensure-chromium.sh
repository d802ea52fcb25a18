#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests (playwright-core drives it; its own browser
# download does not work here). Uses CHROMIUM_PATH or one on PATH, else installs Debian's `chromium`
# with apt (root only). Fails with a message saying what to do when it cannot.
set -euo pipefail
if [ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ]; then echo "$CHROMIUM_PATH"; exit 0; fi
for name in chromium chromium-browser google-chrome; do
  if path="$(command -v "$name")"; then echo "$path"; exit 0; fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "Installing Chromium for the browser tests (apt-get install chromium) ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends chromium >/tmp/durable-mcp-host-chromium.log 2>&1; then
    apt-get update >>/tmp/durable-mcp-host-chromium.log 2>&1 || true
    apt-get install -y --no-install-recommends chromium >>/tmp/durable-mcp-host-chromium.log 2>&1 || true
  fi
  if path="$(command -v chromium)"; then echo "$path"; exit 0; fi
  echo "apt-get could not install chromium (log: /tmp/durable-mcp-host-chromium.log)" >&2
fi
echo "No Chromium found for the browser tests: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH" >&2
exit 1
