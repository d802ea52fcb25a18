# Sourced by the npm entry scripts (start, test, bench, soak) from the project's root: Node 22 on the
# PATH, dependencies installed and the build up to date (setup.sh), and the Temporal CLI in TEMPORAL_CLI.
source scripts/use-node22.sh
bash scripts/setup.sh
TEMPORAL_CLI="$(bash scripts/ensure-temporal.sh)"
export TEMPORAL_CLI
