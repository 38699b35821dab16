# gatewayd — build, test and tooling. `make help` lists the targets.
GO      ?= go
BIN     ?= bin/gatewayd
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
# The commit is set explicitly: builds run with -buildvcs=false here and in
# some CI environments, where the Go toolchain records none.
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: help build test test-codex check lint bench tools run fuzz record package

# The pinned codex is installed on first use and again whenever the lock
# changes (npm ci writes this hidden lockfile last).
CODEX_INSTALLED := tools/node_modules/.package-lock.json

# staticcheck is pinned and built into tools/bin on first use; the version
# is in the file name, so changing STATICCHECK_VERSION builds the new one.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := tools/bin/staticcheck-$(STATICCHECK_VERSION)

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/gatewayd
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gatewayd

# `make package` builds dist/gatewayd_<version>_<arch>.deb and
# dist/gatewayd-<version>-1.<arch>.rpm for each of ARCHES with nfpm
# (tools/package, pinned in go.mod), from a binary built with CGO_ENABLED=0:
# modernc's SQLite is pure Go, so arm64 cross-compiles. The package version
# comes from VERSION: a tag v1.2.3 is 1.2.3, v1.2.3-4-gabc 1.2.3+4.gabc, a
# bare commit 0.0.0+<commit>. The package's layout and scripts: deploy/package.
#
# BUNDLE_CODEX=1 also puts the pinned codex in the package, at
# /usr/lib/gatewayd/codex (gatewayd-with-codex_<version>_<arch>.deb): the
# native build for each architecture, fetched from the npm registry with
# `npm pack @openai/codex@<pinned>-linux-<x64|arm64>` (about 100 MB each to fetch,
# kept in CODEX_CACHE) and checked to be that release for that target.
ARCHES ?= amd64 arm64
DIST   ?= dist
BUNDLE_CODEX ?=
package: ## build the .deb and .rpm for ARCHES into dist/ (VERSION=v1.2.3 sets the version; BUNDLE_CODEX=1 bundles codex)
	@set -e; mkdir -p $(DIST); tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for a in $(ARCHES); do \
	  echo "package: linux/$$a"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$tmp/gatewayd-$$a" ./cmd/gatewayd; \
	  $(GO) run ./tools/package -version '$(VERSION)' -arch $$a -binary "$$tmp/gatewayd-$$a" -out $(DIST) \
	    $(if $(BUNDLE_CODEX),-bundle-codex "$(CODEX_CACHE)/bundle"); \
	done

# The store's suite runs a second time on PostgreSQL (a throwaway server
# per test binary; skipped when the server binaries are missing outside CI).
# That pass runs alongside the rest, not after it: most of the suite waits
# on processes and servers rather than computing. Its output is held back
# and printed at the end, so the two runs do not interleave, and the target
# fails when either run fails. cmd/gatewayd's process and browser tests take
# several minutes on two cores, close to go test's default 10-minute limit
# per package: the limit is 25 minutes, well inside CI's budget.
test: $(CODEX_INSTALLED) ## run every test with the race detector (installs the pinned codex first)
	@pgout=$$(mktemp); \
	GATEWAYD_TEST_STORE=postgres $(GO) test -race -count=1 -timeout 25m ./store/ >$$pgout 2>&1 & pgpid=$$!; \
	$(GO) test -race -count=1 -timeout 25m ./...; rc=$$?; \
	wait $$pgpid; pgrc=$$?; \
	echo "GATEWAYD_TEST_STORE=postgres $(GO) test -race -count=1 -timeout 25m ./store/"; cat $$pgout; rm -f $$pgout; \
	[ $$rc -eq 0 ] && [ $$pgrc -eq 0 ]

# `make test-codex VERSION=x.y.z` runs the tests that drive the real codex
# app-server against another codex release: it is installed from npm once
# into CODEX_CACHE/VERSION and passed to the tests as GATEWAYD_CODEX_BIN.
# Only VERSION given on the command line (or in the environment) counts:
# the file's default is gatewayd's own version. No race detector: this run
# asks whether the app-server protocol still fits, and halves the time.
CODEX_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gatewayd/codex
CODEX_TEST_PKGS ?= ./runtime/codex/... ./gateway/
test-codex: ## run the codex integration tests against codex VERSION=x.y.z (installed from npm into a cache)
	@case "$(origin VERSION)" in command*|environment*) ;; *) echo "usage: make test-codex VERSION=x.y.z"; exit 2;; esac; \
	case "$(VERSION)" in ''|*[!0-9A-Za-z.-]*) echo "test-codex: VERSION=$(VERSION) is not a codex version"; exit 2;; esac; \
	dir="$(CODEX_CACHE)/$(VERSION)"; \
	bin=$$(find "$$dir/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f 2>/dev/null | head -n 1); \
	if [ -z "$$bin" ]; then \
	  npm install --prefix "$$dir" --no-audit --no-fund --no-package-lock "@openai/codex@$(VERSION)" || exit 1; \
	  bin=$$(find "$$dir/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f | head -n 1); \
	fi; \
	[ -x "$$bin" ] || { echo "test-codex: no native codex binary under $$dir"; exit 1; }; \
	echo "test-codex: $$("$$bin" --version) at $$bin"; \
	export GATEWAYD_CODEX_BIN="$$bin"; \
	$(GO) test -count=1 $(CODEX_TEST_PKGS); rc=$$?; \
	$(GO) test -count=1 -run '^TestDoctor' ./cmd/gatewayd/; drc=$$?; \
	[ $$rc -eq 0 ] && [ $$drc -eq 0 ]

# The quick loop: -short skips the process tests, the ones that build or
# run gatewayd, the real codex app-server, a PostgreSQL server or a
# crashing child (so the store runs on SQLite only); no race detector, to
# stay under a minute on two cores. make test runs everything, with -race.
# More tests run at once than there are cores because most of them wait
# (discordgo's Close alone sleeps a second in every Discord test).
check: ## unit tests only, quickly: go test -short, no race detector, no process tests
	$(GO) test -short -count=1 -parallel 8 ./...

lint: $(STATICCHECK) ## gofmt must have nothing to say; go vet and staticcheck must pass
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	@mkdir -p tools/bin
	GOBIN=$(CURDIR)/tools/bin/.gobin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv tools/bin/.gobin/staticcheck $@ && rmdir tools/bin/.gobin

# `go test -fuzz` takes one target per package run, so every Fuzz function
# found in a _test.go file gets its own run of FUZZTIME.
FUZZTIME ?= 10s
fuzz: ## run every fuzz target for FUZZTIME each (default 10s)
	@set -e; for f in $$(grep -rl --include='*_test.go' --exclude-dir=node_modules '^func Fuzz' . | sort); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "fuzz $$(dirname $$f) $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -parallel 1 $$(dirname $$f); \
	  done; \
	done

record: $(CODEX_INSTALLED) ## re-record testdata/codex from the pinned codex app-server
	$(GO) test -count=1 -run '^TestRecord' ./runtime/codex -record

bench: $(CODEX_INSTALLED) ## run the benchmarks and a small load through the real daemon (figures go in issue notes)
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./...
	@out=$$(mktemp); $(GO) test -count=1 -v -run 'TestLoad$$|TestKnownLanes' ./tools/loadgen -load -lanes=20 -messages=3 >$$out 2>&1; \
	  rc=$$?; grep 'loadgen:' $$out; [ $$rc -eq 0 ] || cat $$out; rm -f $$out; exit $$rc

tools: ## (re)install the pinned tools: the real codex app-server, @openai/codex 0.169.0
	npm ci --prefix tools --no-audit --no-fund

$(CODEX_INSTALLED): tools/package.json tools/package-lock.json
	npm ci --prefix tools --no-audit --no-fund

# `make run` uses the pinned codex from `make tools` unless the operator chose one.
CODEX_PINNED := $(CURDIR)/tools/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

run: $(CODEX_INSTALLED) build ## build and run the daemon (local API lane on 127.0.0.1:8787 when no bot token is set)
	GATEWAYD_CODEX_COMMAND="$${GATEWAYD_CODEX_COMMAND:-$(CODEX_PINNED)}" ./$(BIN) run
