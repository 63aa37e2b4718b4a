#!/usr/bin/env bash
# Builds the test environment's binaries into $1 (default bin/k8s): kube-apiserver,
# kube-controller-manager, kube-scheduler (k8s.io/kubernetes v1.36.3), etcd (v3.6.8)
# and kwok (v0.7.0). A stamp file records what was built from which inputs, so a
# second run with the binaries present returns at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../bin/k8s}" && cd "${1:-$here/../../bin/k8s}" && pwd)
export GOTOOLCHAIN=local GOSUMDB=off GOFLAGS=-mod=mod
kube_version=v1.36.3
kwok_version=v0.7.0
stamp="$out/.stamp"
want="$( (cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go"; echo "$kube_version $kwok_version") | sha256sum | cut -d' ' -f1)"
bins=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
current() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
  for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || return 1; done
}
current && exit 0
# Several test binaries may ask at once: one builds, the others wait and reuse.
exec 9>"$out/.lock"
flock 9
current && exit 0
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
cd "$here"
echo "testbin: building kube-apiserver, kube-controller-manager, kube-scheduler $kube_version and etcd into $out (several minutes the first time)" >&2
go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler
go build -trimpath -ldflags "-s -w" -o "$out/etcd" ./etcd
echo "testbin: building kwok $kwok_version" >&2
GOBIN="$out" GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
echo "$want" > "$stamp"
