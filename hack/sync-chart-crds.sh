#!/usr/bin/env bash
# Copies the generated CRDs from config/crd/bases into the Helm chart. The chart's
# CRDs are never edited by hand; CI fails when this copy is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
dst=charts/conveyor/crds
[[ -d charts/conveyor ]] || exit 0
mkdir -p "$dst"
rm -f "$dst"/*.yaml
for f in config/crd/bases/*.yaml; do
  { echo "# Generated from $f by hack/sync-chart-crds.sh. DO NOT EDIT."; cat "$f"; } >"$dst/$(basename "$f")"
done
