#!/usr/bin/env bash
# Refuses a tracked file over 1 MiB that is not on the allow-list below: a
# built executable or a dump committed by mistake makes every clone slower
# for good. Allow a file by adding its path, with a reason, to ALLOWED.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
LIMIT=$((1024 * 1024))
ALLOWED=(
	# the subset of GitHub's OpenAPI description githubtest/contract validates against (generated, see its README)
	internal/githubtest/contract/testdata/openapi-subset.json
)
status=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$LIMIT" ]; then
		allowed=false
		for a in "${ALLOWED[@]}"; do [ "$a" = "$f" ] && allowed=true; done
		if ! $allowed; then
			echo "large file: $f is $size bytes (over 1 MiB): remove it from git, or add it to ALLOWED in hack/verify/large-files.sh with a reason" >&2
			status=1
		fi
	fi
done < <(git ls-files -z)
exit $status
