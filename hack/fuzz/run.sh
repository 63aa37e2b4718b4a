#!/usr/bin/env bash
# Runs each fuzz target (package:Target) for FUZZTIME. Go 1.26's fuzzing
# engine sometimes ends a run at its -fuzztime deadline with "context deadline
# exceeded" and no failing input: the coordinator's deadline races a worker
# mid-call (go.dev/issue/75804, fixed in Go 1.27). That run found nothing, so
# it is run once more, and its output (which reads as a failed test) is not
# printed. A real failure writes its input under testdata/fuzz and fails at
# once, with the whole output.
set -euo pipefail
fuzztime=${FUZZTIME:?set FUZZTIME}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	pkg=${t%%:*} target=${t#*:}
	for try in 1 2; do
		echo "fuzz $target ($pkg) for $fuzztime"
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
			cat "$log"
			break
		fi
		if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
			echo "fuzz $target: the engine stopped at its deadline with no failing input (go.dev/issue/75804); running it again"
			continue
		fi
		cat "$log"
		exit 1
	done
done
