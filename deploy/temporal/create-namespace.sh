#!/bin/sh
# Registers the platform's namespace once the server answers (a new cluster has none), with
# the Temporal CLI; a namespace that exists is left as it is.
# Reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default: default), TEMPORAL_RETENTION
# (default 72h) and TEMPORAL_CLI (default: temporal on PATH).
set -eu
cli=${TEMPORAL_CLI:-temporal}
address=${TEMPORAL_ADDRESS:-127.0.0.1:7233}
namespace=${TEMPORAL_NAMESPACE:-default}
waited=0
until said=$("$cli" operator cluster health --address "$address" 2>&1); do
  waited=$((waited + 1))
  if [ "$waited" -ge 120 ]; then echo "create-namespace: no Temporal server at $address after 120 s: $said" >&2; exit 1; fi
  sleep 1
done
if "$cli" operator namespace describe --address "$address" --namespace "$namespace" >/dev/null 2>&1; then exit 0; fi
"$cli" operator namespace create --address "$address" --namespace "$namespace" --retention "${TEMPORAL_RETENTION:-72h}"
