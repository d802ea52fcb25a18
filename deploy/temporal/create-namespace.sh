#!/bin/sh
# Namespace step of the compose stack (runs in temporalio/admin-tools once the server is healthy):
# creates the namespace with the retention turns must stay readable for, or sets that retention on
# an existing one. The API and workers start only after this step succeeded.
set -eu
: "${TEMPORAL_ADDRESS:?}"
ns="${TEMPORAL_NAMESPACE:-default}"
retention="${NAMESPACE_RETENTION:-720h}"
tries=0
until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "Temporal at $TEMPORAL_ADDRESS is not serving" >&2; exit 1; }
  sleep 2
done
if temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$ns" >/dev/null 2>&1; then
  temporal operator namespace update --address "$TEMPORAL_ADDRESS" --namespace "$ns" --retention "$retention"
  echo "namespace $ns exists; retention $retention"
else
  temporal operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$ns" --retention "$retention"
  echo "namespace $ns created; retention $retention"
fi
