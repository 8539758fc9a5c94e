# The commands of the README.
.PHONY: run test deps bench

# Everything on loopback: emulators, every function, Pub/Sub wiring, demo data.
run: deps
	go run ./cmd/firelock-local

# Every test, Go and web, against the real emulators (started by the Go
# tests themselves; around the web tests by cmd/emulate).
test: deps
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" >&2; exit 1)
	go vet ./...
	cd web && npm run --silent check
	go test -race -count=1 -timeout 20m ./...
	go run ./cmd/emulate -only firestore,auth -- npm --prefix web run --silent test

deps:
	@./scripts/deps.sh

# Every scenario against the seed patterns; a table and bench-results.json.
# The web client's mutex runs on the same emulators (bench-results-web.json).
bench: deps
	go run ./cmd/emulate -only firestore,auth -- sh -c 'go run ./cmd/bench && npm --prefix web run --silent bench'
