#!/usr/bin/env bash
# Builds the pinned Kubernetes test binaries (etcd, kube-apiserver, kube-controller-manager,
# kubectl) and the developer tools (controller-gen, helm) from the Go module proxy into a
# versioned cache folder, and prints that folder. Does nothing for a binary that is already there.
#
# envtest's usual download of these binaries cannot work on machines without general network
# access, so we build them: k8s.io/kubernetes cannot be `go install`ed directly (its go.mod has
# replace directives), so a scratch wrapper module pins every staging module to the release.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-0.23.0}"
HELM_VERSION="${HELM_VERSION:-3.22.0}"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="${CACHE_ROOT}/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"
TOOLS="${CACHE_ROOT}/tools"
STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver streaming)

# Every build uses the same CGO setting, or Go throws its build cache away.
export CGO_ENABLED=0
mkdir -p "$OUT" "$TOOLS"

say() { echo "build-test-binaries: $*" >&2; }

build_k8s() {
  local missing=()
  for b in kube-apiserver kube-controller-manager kubectl; do
    [[ -x "$OUT/$b" ]] || missing+=("$b")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local mod="$CACHE_ROOT/src/k8s-$K8S_VERSION"
  mkdir -p "$mod"
  if [[ ! -f "$mod/go.sum" ]]; then
    {
      echo "module conveyor.dev/k8s-test-binaries"
      echo
      echo "go 1.26"
      echo
      echo "godebug default=go1.26"
      echo
      echo "require k8s.io/kubernetes v$K8S_VERSION"
      echo
      for s in "${STAGING[@]}"; do echo "replace k8s.io/$s => k8s.io/$s v0.${K8S_VERSION#1.}"; done
    } >"$mod/go.mod"
    say "resolving k8s.io/kubernetes v$K8S_VERSION modules"
    (cd "$mod" && go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" \
      "k8s.io/kubernetes/cmd/kube-controller-manager@v$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@v$K8S_VERSION")
  fi
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#1.}"
  ldflags="${ldflags%.*}"  # gitMinor is the bare minor number
  # One go build for all of them: the packages they share compile once, and both cores stay
  # busy to the end (the links run side by side instead of one after another).
  local pkgs=() tmp="$OUT/build.tmp"
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  say "building ${missing[*]} v$K8S_VERSION (first time: several minutes)"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$mod" && go build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}")
  for b in "${missing[@]}"; do mv "$tmp/$b" "$OUT/$b"; done
  rmdir "$tmp"
}

build_etcd() {
  [[ -x "$OUT/etcd" ]] && return 0
  local mod="$CACHE_ROOT/src/etcd-$ETCD_VERSION"
  mkdir -p "$mod"
  cat >"$mod/main.go" <<'GO'
// Command etcd runs the etcd server, for tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  if [[ ! -f "$mod/go.sum" ]]; then
    printf 'module conveyor.dev/etcd-test-binary\n\ngo 1.26\n' >"$mod/go.mod"
    (cd "$mod" && go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" && go mod tidy)
  fi
  say "building etcd v$ETCD_VERSION"
  (cd "$mod" && go build -trimpath -ldflags="-s -w" -o "$OUT/etcd.tmp" .)
  mv "$OUT/etcd.tmp" "$OUT/etcd"
}

build_tools() {
  if [[ ! -x "$TOOLS/controller-gen-v$CONTROLLER_GEN_VERSION" ]]; then
    say "building controller-gen v$CONTROLLER_GEN_VERSION"
    GOBIN="$TOOLS/gobin" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@v$CONTROLLER_GEN_VERSION"
    mv "$TOOLS/gobin/controller-gen" "$TOOLS/controller-gen-v$CONTROLLER_GEN_VERSION"
  fi
  if [[ ! -x "$TOOLS/helm-v$HELM_VERSION" ]]; then
    say "building helm v$HELM_VERSION"
    GOBIN="$TOOLS/gobin" go install -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
    mv "$TOOLS/gobin/helm" "$TOOLS/helm-v$HELM_VERSION"
  fi
  # promtool (checks and unit-tests the chart's alerts) comes from Debian's prometheus package
  # (hack/install-deps.sh): building promtool from
  # the Prometheus module compiled the cloud SDKs of its service discovery (~50 min cold).
  # Linked here when installed; the chart test also finds it on PATH.
  local p
  p=$(command -v promtool || true)
  if [[ -n "$p" ]]; then ln -sf "$p" "$TOOLS/promtool"; fi
  ln -sf "controller-gen-v$CONTROLLER_GEN_VERSION" "$TOOLS/controller-gen"
  ln -sf "helm-v$HELM_VERSION" "$TOOLS/helm"
}

case "${1:-all}" in
  tools) build_tools; echo "$TOOLS" ;;
  k8s) build_etcd; build_k8s; echo "$OUT" ;;
  all) build_tools; build_etcd; build_k8s; echo "$OUT" ;;
  *) echo "usage: $0 [all|tools|k8s]" >&2; exit 2 ;;
esac
