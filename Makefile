# The commands of the README.
# Each line of `make test` is a stage: scripts/stage.sh times it.
STAGE = ./scripts/stage.sh

.PHONY: run test deps bench surge soak lighthouse bin/firelock

# Everything on loopback: emulators, every function, Pub/Sub wiring, demo
# data, and the web app on Vite's dev server (http://127.0.0.1:5173).
run: deps
	go run ./cmd/firelock-local

# Every test, Go and web, against the real emulators (docs/testing.md keeps
# each stage's time and the budget). First the quick checks side by side:
# gofmt, go vet, the web app's type check and lint, and examples/ (the
# README's guide, a module of its own, so ./... leaves it out); make's
# --output-sync prints each one's output whole when it ends. Then:
#  - every Go package, each on its own emulators (docs/testing.md says why
#    not one shared), four at a time, the longest started first
#    (scripts/gopkgs.sh): the long packages wait on leases, ticks and the
#    fault proxy more than they compute (two at a time kept the machine 85 %
#    idle), and the race detector's heap is collected less often (GOGC=400:
#    CPU, not memory, is what two cores lack);
#  - the overload test (issue #41) alone: the load it measures is its own;
#  - Vitest and Playwright in Chromium inside one local bundle (emulators,
#    functions and the built app, started by cmd/firelock-local around them);
#  - last, side by side: a short bundle with App Check enforced (CONTRACT
#    §12) for that spec alone, and the README's shell blocks as written
#    against `make run` (its default ports; every other bundle takes free ones).
test: deps
	@rm -f test-results/stages.txt
	@$(MAKE) --no-print-directory -j --output-sync=target test-format test-vet test-web-check test-examples
	$(STAGE) go-test env GOGC=400 go test -race -count=1 -p 4 -timeout 20m $$(./scripts/gopkgs.sh)
	$(STAGE) overload env FIRELOCK_OVERLOAD=1 go test -count=1 -run '^TestAdmitterKeepsItsLeaseWhileTheServerIsPastItsCap$$' ./functions/
	$(STAGE) web go run ./cmd/firelock-local -port 0 -web preview -web-port 0 -schedule '' -env-file '' -log web/test-results/functions.log -- \
		sh -c 'cd web && npm run --silent test && npm run --silent e2e' || \
		{ echo "--- the functions' last log lines (web/test-results/functions.log):" >&2; \
		  tail -n 40 web/test-results/functions.log >&2; exit 1; }
	@$(MAKE) --no-print-directory -j --output-sync=target test-web-appcheck test-readme
	@echo "stages (seconds; docs/testing.md keeps the budget):" && cat test-results/stages.txt

.PHONY: test-format test-vet test-web-check test-examples test-web-appcheck test-readme
test-format:
	@$(STAGE) format sh -c 'gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" >&2; exit 1)'
# go vet builds what it checks with -race, as the Go tests do, so that the
# packages it compiles are the ones go-test then finds in the build cache
# (from an empty cache: vet and a race build of counter took 38 + 48 s
# plain, 44 + 11 s this way). No file here has a race build tag, so vet
# checks the same code.
test-vet:
	@$(STAGE) vet go vet -race ./...
test-web-check:
	@$(STAGE) web-check sh -c 'cd web && npm run --silent check'
test-examples:
	@$(STAGE) examples sh -c 'cd examples && go vet -race ./... && go test -race -count=1 ./...'
test-web-appcheck:
	@$(STAGE) web-appcheck go run ./cmd/firelock-local -port 0 -web preview -web-port 0 -schedule '' -env-file '' -appcheck enforce -log web/test-results/functions-appcheck.log -- \
		sh -c 'cd web && npm run --silent e2e:appcheck' || \
		{ echo "--- the functions' last log lines (web/test-results/functions-appcheck.log):" >&2; \
		  tail -n 40 web/test-results/functions-appcheck.log >&2; exit 1; }
test-readme:
	@$(STAGE) readme env FIRELOCK_README_TEST=1 go test -count=1 -run '^TestREADME' ./internal/testkit/readme/

deps:
	@./scripts/deps.sh

# The operators' command line (docs/cli.md), built: run it as bin/firelock.
# Under `go run` a usage error would exit 1, not 2 (go run replaces exit
# codes). Always rebuilt; go build's cache makes that quick.
bin/firelock:
	go build -o bin/firelock ./cmd/firelock

# Every scenario against the seed patterns; a table and bench-results.json.
# The web client's benchmarks run on the same emulators, inside the local
# bundle: its mutex (bench-results-web.json), how fast a booking reaches
# another client's listener (bench-results-web-latency.json), and the
# scanner's offline verdicts in Chromium (the Playwright tests tagged
# @bench; web/test-results/door-verdict-chromium.json).
bench: deps
	FIRELOCK_EMULATOR_JAVA_OPTS= go run ./cmd/firelock-local -port 0 -web preview -web-port 0 -schedule '' -log bench-functions.log -- \
		sh -c 'go run ./cmd/bench && npm --prefix web run --silent bench && cd web && E2E_BENCH=1 npx playwright test'

# Lighthouse's mobile audit of the built app's seat map (issue #50), inside
# the local bundle (web/scripts/lighthouse.mjs, Debian's Chromium or
# CHROME_PATH): exit 1 under accessibility 95, best practices 95 or
# performance 90; the report in web/test-results/lighthouse.html.
lighthouse: deps
	go run ./cmd/firelock-local -port 0 -web preview -web-port 0 -schedule '' -env-file '' -log web/test-results/functions-lighthouse.log -- \
		sh -c 'cd web && node scripts/lighthouse.mjs'

# Minutes of the lock's fault soak and of the linearizability checks of
# the lock, the seat map and the counter (FIRELOCK_SOAK each, a fresh seed
# per run, one package at a time), each ending in a summary: operations
# checked, ambiguous, faults injected, violations. A failure names its
# visualization under test-results/linearize/.
SOAK ?= 3m
soak: deps
	FIRELOCK_SOAK=$(SOAK) go test -race -count=1 -p 1 -timeout 60m -v \
		-run '^(TestLockHistoryIsLinearizable|TestLockUnderFaults|TestSeatHistoryIsLinearizable|TestCounterHistoryIsLinearizable)$$' \
		./lock/ ./booking/ ./counter/

# The waiting room's surge test on the emulators (issue #22): 2,000 users
# of the Auth emulator on the real functions, 200 seats; a text report and
# surge-results.json; exit 1 if a check or goal fails. Flags: SURGE_FLAGS.
# Not part of `make test`, which runs a short one (cmd/surge's TestShortSurge).
# The door's surge (issue #49): make surge SURGE_FLAGS=-door (docs/door.md).
surge: deps
	go run ./cmd/surge $(SURGE_FLAGS)
