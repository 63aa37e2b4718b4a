#!/usr/bin/env bash
# Builds Flagger (github.com/fluxcd/flagger, the version go.mod pins) into $1
# (default bin/flagger): the controller `flagger` and its CustomResourceDefinitions
# (crd.yaml, artifacts/flagger/crd.yaml of the same module version). A stamp file
# records what was built from which inputs, so a second run with the binary
# present returns at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../bin/flagger}" && cd "${1:-$here/../../bin/flagger}" && pwd)
export GOTOOLCHAIN=local GOSUMDB=off GOFLAGS=-mod=mod
stamp="$out/.stamp"
want="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)"
current() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$out/flagger" && -f "$out/crd.yaml" ]]
}
current && exit 0
# Several test binaries may ask at once: one builds, the others wait and reuse.
exec 9>"$out/.lock"
flock 9
current && exit 0
cd "$here"
version=$(go list -m -f '{{.Version}}' github.com/fluxcd/flagger)
echo "flagger: building Flagger $version into $out (a few minutes the first time)" >&2
go build -trimpath -ldflags "-s -w" -o "$out/flagger" github.com/fluxcd/flagger/cmd/flagger
cp "$(go list -m -f '{{.Dir}}' github.com/fluxcd/flagger)/artifacts/flagger/crd.yaml" "$out/crd.yaml"
chmod 0644 "$out/crd.yaml"
echo "$want" > "$stamp"
