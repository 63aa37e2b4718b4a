#!/usr/bin/env bash
# Builds the Argo Rollouts controller (github.com/argoproj/argo-rollouts, the
# version go.mod requires) into $1 (default bin/rollouts) as rollouts-controller,
# and copies the CRDs of that same module version beside it (crds/). A stamp file
# records what was built from which inputs, so a second run with the binary
# present returns at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../bin/rollouts}" && cd "${1:-$here/../../bin/rollouts}" && pwd)
export GOTOOLCHAIN=local GOSUMDB=off GOFLAGS=-mod=mod
stamp="$out/.stamp"
want="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)"
current() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$out/rollouts-controller" ]] || return 1
  for c in rollout analysis-run analysis-template cluster-analysis-template experiment; do
    [[ -f "$out/crds/$c-crd.yaml" ]] || return 1
  done
}
current && exit 0
# Several test binaries may ask at once: one builds, the others wait and reuse.
exec 9>"$out/.lock"
flock 9
current && exit 0
cd "$here"
version=$(go list -m -f '{{.Version}}' github.com/argoproj/argo-rollouts)
echo "rollouts: building the Argo Rollouts controller $version into $out (a few minutes the first time)" >&2
go build -trimpath -ldflags "-s -w -X github.com/argoproj/argo-rollouts/utils/version.version=${version#v}" \
  -o "$out/rollouts-controller" github.com/argoproj/argo-rollouts/cmd/rollouts-controller
dir=$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-rollouts)
mkdir -p "$out/crds"
for c in rollout analysis-run analysis-template cluster-analysis-template experiment; do
  install -m 0644 "$dir/manifests/crds/$c-crd.yaml" "$out/crds/$c-crd.yaml"
done
echo "$want" > "$stamp"
