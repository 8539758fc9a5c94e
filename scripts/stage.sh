#!/usr/bin/env bash
# stage.sh NAME COMMAND...: runs COMMAND, then prints how long it took and
# appends "NAME SECONDS EXIT" to test-results/stages.txt, so that `make test`
# (and .ci/run) end with each stage's time (docs/testing.md keeps the budget).
set -uo pipefail
name=$1
shift
start=$(date +%s)
"$@"
code=$?
took=$(($(date +%s) - start))
mkdir -p test-results
printf '%s %d %d\n' "$name" "$took" "$code" >>test-results/stages.txt
printf 'stage %s: %d s%s\n' "$name" "$took" "$([ "$code" -eq 0 ] || echo ", failed (exit $code)")" >&2
exit "$code"
