#!/bin/sh
# The server in a container: bound on every interface, announcing the container's own
# address to its cluster (TEMPORAL_BROADCAST_ADDRESS), with deploy/temporal/config.yaml.
set -eu
export BIND_ON_IP="${BIND_ON_IP:-0.0.0.0}"
export TEMPORAL_BROADCAST_ADDRESS="${TEMPORAL_BROADCAST_ADDRESS:-$(hostname -i | cut -d' ' -f1)}"
exec temporal-server --config-file /etc/temporal/config.yaml --allow-no-auth start
