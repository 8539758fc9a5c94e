# The commands of the README.
.PHONY: run test deps bench

# Everything on loopback: emulators, every function, Pub/Sub wiring, demo data.
run: deps
	go run ./cmd/firelock-local

# Every test, against the real emulators (started by the tests themselves).
test: deps
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" >&2; exit 1)
	go vet ./...
	go test -race -count=1 -timeout 20m ./...

deps:
	@./scripts/deps.sh

# Every scenario against the seed patterns; a table and bench-results.json.
bench: deps
	go run ./cmd/bench
