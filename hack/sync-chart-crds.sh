#!/usr/bin/env bash
# Copies generated manifests into the Helm chart, which never holds hand-edited copies:
#   config/crd/bases/*.yaml  -> charts/conveyor/crds/
#   config/rbac/role.yaml    -> charts/conveyor/files/operator-rules.yaml (the operator's rules)
# CI fails when these copies are stale (make verify-generated).
set -euo pipefail
cd "$(dirname "$0")/.."
chart=charts/conveyor
mkdir -p "$chart/crds" "$chart/files"
rm -f "$chart"/crds/*.yaml
for f in config/crd/bases/*.yaml; do
  [[ -e "$f" ]] || continue
  { echo "# Generated from $f by hack/sync-chart-crds.sh. DO NOT EDIT."; cat "$f"; } >"$chart/crds/$(basename "$f")"
done
rules="$chart/files/operator-rules.yaml"
{
  echo "# Generated from config/rbac/role.yaml by hack/sync-chart-crds.sh. DO NOT EDIT."
  if [[ -f config/rbac/role.yaml ]]; then
    sed -n '/^rules:/,$p' config/rbac/role.yaml
  else
    echo "rules: []"
  fi
} >"$rules"
