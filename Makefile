# claude-relay: `make help` lists the targets.

CLI_VERSION        := 2.1.330
SDK_VERSION        := 0.3.330
STATICCHECK        := honnef.co/go/tools/cmd/staticcheck@v0.8.2
CACHE_DIR          ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/claude-relay
CLI_DIR            := $(CACHE_DIR)/cli-$(CLI_VERSION)
SDK_DIR            := $(CACHE_DIR)/agent-sdk-$(SDK_VERSION)
GOBIN_DIR          := $(CACHE_DIR)/bin
BIN                := bin/claude-relay
VERSION            ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS            := -X github.com/claude-relay/claude-relay/internal/version.Version=$(VERSION)
PROMPT             ?= List the files in this directory and say what the project is, in two lines.

export CLAUDE_RELAY_TEST_CLI ?= $(CLI_DIR)/node_modules/.bin/claude
export CLAUDE_RELAY_AGENT_SDK ?= $(SDK_DIR)/node_modules/@anthropic-ai/claude-agent-sdk

.PHONY: help run build test unit lint deps bench fuzz

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

run: build deps ## build, then `claude-relay run "$(PROMPT)"` on the embedded default backend
	PATH="$(CLI_DIR)/node_modules/.bin:$$PATH" ./$(BIN) run "$(PROMPT)"

build: ## build bin/claude-relay
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/claude-relay

test: deps lint ## install pinned test deps, lint, then go test -race ./...
	go test -race -count=1 -timeout 30m ./...

unit: ## go test -race without installing anything (real-CLI tests skip if absent)
	go test -race ./...

# tidy -e: a test-only dependency of modernc.org/sqlite (a pprof pseudo-version)
# is refused by the module proxy; it is never built here, so tolerate it.
lint: ## go vet, staticcheck, gofmt and go mod tidy must be clean
	go vet ./...
	GOBIN=$(GOBIN_DIR) go install $(STATICCHECK)
	$(GOBIN_DIR)/staticcheck ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@cp go.mod /tmp/claude-relay.go.mod.bak && cp go.sum /tmp/claude-relay.go.sum.bak; \
	  go mod tidy -e 2>/dev/null; \
	  if ! cmp -s go.mod /tmp/claude-relay.go.mod.bak || ! cmp -s go.sum /tmp/claude-relay.go.sum.bak; then \
	    echo "go mod tidy changes go.mod/go.sum: run it and commit"; \
	    cp /tmp/claude-relay.go.mod.bak go.mod; cp /tmp/claude-relay.go.sum.bak go.sum; exit 1; fi

deps: ## install the pinned Claude CLI and Agent SDK (npm) into $(CACHE_DIR)
	@if [ -x "$(CLI_DIR)/node_modules/.bin/claude" ] && \
	    "$(CLI_DIR)/node_modules/.bin/claude" --version 2>/dev/null | grep -q '^$(CLI_VERSION) '; then \
	  echo "claude $(CLI_VERSION) present in $(CLI_DIR)"; \
	else \
	  mkdir -p "$(CLI_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(CLI_DIR)" \
	    @anthropic-ai/claude-code@$(CLI_VERSION); \
	fi
	@if [ -f "$(SDK_DIR)/node_modules/@anthropic-ai/claude-agent-sdk/package.json" ]; then \
	  echo "claude-agent-sdk $(SDK_VERSION) present in $(SDK_DIR)"; \
	else \
	  mkdir -p "$(SDK_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(SDK_DIR)" \
	    @anthropic-ai/claude-agent-sdk@$(SDK_VERSION); \
	fi

bench: deps ## run the benchmarks and print a table with same-run baselines
	go run ./internal/benchtab

fuzz: ## run every fuzz target for FUZZTIME (default 60s) each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    go test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-60s} -fuzzminimizetime 5s $$pkg || exit 1; done; done
