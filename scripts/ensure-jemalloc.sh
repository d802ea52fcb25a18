#!/usr/bin/env bash
# Prints the path of jemalloc's shared library, for LD_PRELOAD in long-lived Node processes (decision
# 0046: glibc's malloc keeps what a load peak took; jemalloc gives it back). Uses JEMALLOC_PATH or the
# library where Debian and others put it, else installs Debian's `libjemalloc2` with apt (root only).
# Fails with a message saying what to do when it cannot.
set -euo pipefail
find_lib() {
  for path in /usr/lib/*-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
    if [ -f "$path" ]; then echo "$path"; return 0; fi
  done
  return 1
}
if [ -n "${JEMALLOC_PATH:-}" ] && [ -f "$JEMALLOC_PATH" ]; then echo "$JEMALLOC_PATH"; exit 0; fi
if find_lib; then exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
apt_install libjemalloc2 /tmp/durable-mcp-host-jemalloc.log || true
if find_lib; then exit 0; fi
echo "No jemalloc found: install it (Debian: apt-get install libjemalloc2) or set JEMALLOC_PATH (apt's log, if it ran: /tmp/durable-mcp-host-jemalloc.log)" >&2
exit 1
