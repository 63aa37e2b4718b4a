#!/usr/bin/env bash
# Runs each fuzz target (package:Target) for FUZZTIME. Go's fuzzing engine
# sometimes ends a run at its -fuzztime deadline with "context deadline
# exceeded" and no failing input (the deadline reached a worker mid-call);
# that run found nothing, so it is run once more. A real failure writes its
# input under testdata/fuzz and fails at once.
set -euo pipefail
fuzztime=${FUZZTIME:?set FUZZTIME}
for t in "$@"; do
	pkg=${t%%:*} target=${t#*:}
	for try in 1 2; do
		echo "fuzz $target ($pkg) for $fuzztime"
		log=$(mktemp)
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
			rm -f "$log"
			break
		fi
		if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
			echo "fuzz $target: the engine stopped at its deadline with no failing input; running it again"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		exit 1
	done
done
