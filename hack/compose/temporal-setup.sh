#!/bin/sh
# temporal-setup: the one-shot job of docker-compose.yaml that prepares the
# Temporal namespace the orchestrator uses: it creates it if missing and
# registers the custom search attributes the workflows set, skipping those
# already registered. Runs in the temporalio/admin-tools image (the temporal
# CLI) once the server is healthy; the worker and the starter start after it.
#
# Arguments: the search attributes as NAME=Type, e.g. WorkerPool=Keyword
# (internal/searchattr lists them; deploy/deploy_test.go checks that
# docker-compose.yaml passes all of them).
# Environment: TEMPORAL_ADDRESS (host:port), TEMPORAL_NAMESPACE.
set -eu

addr=${TEMPORAL_ADDRESS:-temporal:7233}
ns=${TEMPORAL_NAMESPACE:-default}

# retry N CMD...: runs CMD until it succeeds, at most N times, 2s apart.
retry() {
  n=$1
  shift
  i=1
  until "$@"; do
    if [ "$i" -ge "$n" ]; then
      echo "giving up after $n attempts: $*" >&2
      return 1
    fi
    i=$((i + 1))
    sleep 2
  done
}

echo "waiting for the Temporal server at $addr"
retry 90 temporal operator cluster health --address "$addr"

if temporal operator namespace describe --address "$addr" --namespace "$ns" >/dev/null 2>&1; then
  echo "namespace $ns exists"
else
  echo "creating namespace $ns"
  retry 10 temporal operator namespace create --address "$addr" --namespace "$ns"
fi

for def in "$@"; do
  name=${def%%=*}
  type=${def#*=}
  # A new namespace takes a few seconds to reach every server component, so
  # listing and creating retry.
  list=$(retry 30 temporal operator search-attribute list --address "$addr" --namespace "$ns")
  if printf '%s\n' "$list" | grep -qw -- "$name"; then
    echo "search attribute $name exists"
    continue
  fi
  echo "registering search attribute $name ($type)"
  retry 30 temporal operator search-attribute create --address "$addr" --namespace "$ns" --name "$name" --type "$type"
done
echo "namespace $ns is ready"
