#!/usr/bin/env bash
# gopkgs.sh: every Go package of the module (go list ./...), the longest
# tests first, for `make test`'s go-test stage. go test runs two packages at
# a time on two cores; in ./... order the longest (sale, lock) started last
# and ran alone at the end. Longest first, the others fill in beside them
# (docs/testing.md has the times). A package this list does not name still
# runs, after the named ones, so a new package is never left out.
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(go list -m)
first=(sale lock "" cmd/surge functions booking door cmd/firelock-local cmd/firelock jobs payment report counter)
all=$(go list ./...)
for p in "${first[@]}"; do
  pkg=$module${p:+/$p}
  grep -qxF "$pkg" <<<"$all" && echo "$pkg"
done
for pkg in $all; do
  named=false
  for p in "${first[@]}"; do [ "$pkg" = "$module${p:+/$p}" ] && named=true; done
  $named || echo "$pkg"
done
