# claude-relay: `make help` lists the targets.

CLI_VERSION        := 2.1.330
SDK_VERSION        := 0.3.330
ACP_SDK_VERSION    := 2.4.0
ZED_ACP_VERSION    := 0.23.1
STATICCHECK        := honnef.co/go/tools/cmd/staticcheck@v0.8.2
CACHE_DIR          ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/claude-relay
CLI_DIR            := $(CACHE_DIR)/cli-$(CLI_VERSION)
SDK_DIR            := $(CACHE_DIR)/agent-sdk-$(SDK_VERSION)
ACP_SDK_DIR        := $(CACHE_DIR)/acp-sdk-$(ACP_SDK_VERSION)
ZED_ACP_DIR        := $(CACHE_DIR)/claude-agent-acp-$(ZED_ACP_VERSION)
GOBIN_DIR          := $(CACHE_DIR)/bin
BIN                := bin/claude-relay
VERSION            ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS            := -X github.com/claude-relay/claude-relay/internal/version.Version=$(VERSION)
PROMPT             ?= List the files in this directory and say what the project is, in two lines.
FLAKE_COUNT        ?= 20
FLAKE_TIMEOUT      ?= 90m

# The prompt reaches `run` through the environment, never through the recipe's
# command line, so quotes, `$5` and backticks arrive as typed. Make would expand
# the `$5` of a command-line PROMPT=... when exporting it; $(value) keeps it as typed.
override PROMPT := $(value PROMPT)
export PROMPT

export CLAUDE_RELAY_TEST_CLI ?= $(CLI_DIR)/node_modules/.bin/claude
export CLAUDE_RELAY_AGENT_SDK ?= $(SDK_DIR)/node_modules/@anthropic-ai/claude-agent-sdk
# The official ACP TypeScript SDK (its client drives `claude-relay acp` in the
# acp tests) and Zed's own Claude ACP adapter, the reference agent the acp
# tests and benchmarks compare ours with.
export CLAUDE_RELAY_ACP_SDK ?= $(ACP_SDK_DIR)/node_modules/@agentclientprotocol/sdk
export CLAUDE_RELAY_ZED_ACP ?= $(ZED_ACP_DIR)/node_modules/@zed-industries/claude-agent-acp

.PHONY: help run build test unit lint deps bench fuzz flake

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

run: build deps ## build, then `claude-relay run "$PROMPT"` on the embedded default backend
	PATH="$(CLI_DIR)/node_modules/.bin:$$PATH" ./$(BIN) run "$$PROMPT"

build: ## build bin/claude-relay
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/claude-relay

test: deps lint ## install pinned test deps, lint, then go test -race ./...
	go test -race -count=1 -timeout 30m ./...

unit: ## go test -race without installing anything (real-CLI tests skip if absent)
	go test -race ./...

# The tidy check reads `go mod tidy -e -diff` (it changes no file). It fails on
# any go.mod change, and on go.sum changes for modules whose packages this
# module's code or tests compile (`go list -deps -test ./...`, -mod=readonly so
# it cannot repair go.sum under GOFLAGS=-mod=mod) or that left the module graph.
# It ignores go.sum lines for modules still in the graph that we never compile:
# tidy also records checksums for what our dependencies' own tests import (the
# pprof pseudo-version of modernc.org/sqlite's tests), and whether it can add
# them depends on what the module proxy serves that day (-e skips what it cannot
# fetch), so comparing them would flip with the proxy. Neither list needs those
# modules, so the answer is the same whatever the proxy serves for them.
# go.sum is committed as `go mod tidy -e` wrote it.
lint: ## go vet, staticcheck, gofmt and go mod tidy must be clean
	go vet ./...
	GOBIN=$(GOBIN_DIR) go install $(STATICCHECK)
	$(GOBIN_DIR)/staticcheck ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  if ! go list -mod=readonly -deps -test -f '{{with .Module}}{{.Path}}{{end}}' ./... > "$$tmp/built"; then \
	    echo "go.mod/go.sum lack what the build needs (go list -mod=readonly failed above): run go mod tidy -e, then commit go.mod and go.sum"; exit 1; fi; \
	  go mod graph > "$$tmp/edges"; tr ' ' '\n' < "$$tmp/edges" | sed 's/@.*//' > "$$tmp/graph"; \
	  rc=0; go mod tidy -e -diff > "$$tmp/diff" 2> "$$tmp/err" || rc=$$?; \
	  if [ $$rc -ne 0 ] && [ ! -s "$$tmp/diff" ]; then \
	    cat "$$tmp/err"; echo "go mod tidy -e -diff failed (exit $$rc): fix the error above, then run make lint again"; exit 1; fi; \
	  if ! awk -v built="$$tmp/built" -v graph="$$tmp/graph" ' \
	      BEGIN { while ((getline m < built) > 0) B[m] = 1; while ((getline m < graph) > 0) G[m] = 1 } \
	      /^diff / { file = $$2; sub(/^current\//, "", file); next } \
	      /^(---|\+\+\+|@@)/ { next } \
	      /^[-+]/ { m = substr($$1, 2); if (file ~ /go\.sum$$/ && (m in G) && !(m in B)) next; print file ": " $$0; bad = 1 } \
	      END { exit bad }' "$$tmp/diff"; then \
	    echo "go mod tidy would change the lines above: run go mod tidy -e, then commit go.mod and go.sum"; exit 1; fi

deps: ## install the pinned Claude CLI, Agent SDK, ACP SDK and Zed's ACP adapter (npm) into $(CACHE_DIR)
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
	@if [ -f "$(ACP_SDK_DIR)/node_modules/@agentclientprotocol/sdk/package.json" ]; then \
	  echo "@agentclientprotocol/sdk $(ACP_SDK_VERSION) present in $(ACP_SDK_DIR)"; \
	else \
	  mkdir -p "$(ACP_SDK_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(ACP_SDK_DIR)" \
	    @agentclientprotocol/sdk@$(ACP_SDK_VERSION); \
	fi
	@if [ -f "$(ZED_ACP_DIR)/node_modules/@zed-industries/claude-agent-acp/package.json" ]; then \
	  echo "claude-agent-acp $(ZED_ACP_VERSION) present in $(ZED_ACP_DIR)"; \
	else \
	  mkdir -p "$(ZED_ACP_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(ZED_ACP_DIR)" \
	    @zed-industries/claude-agent-acp@$(ZED_ACP_VERSION); \
	fi

bench: deps ## run the benchmarks and print a table with same-run baselines
	go run ./internal/benchtab

fuzz: ## run every fuzz target for FUZZTIME (default 60s) each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    go test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-60s} -fuzzminimizetime 5s $$pkg || exit 1; done; done

# One package at a time, so a failure names its package and the real-CLI
# packages do not compete with each other for the CPU.
flake: deps ## run each package's tests FLAKE_COUNT (20) times under -race, then list the failing packages
	@failed=; for p in $$(go list ./...); do \
	  echo "== $$p"; \
	  nice -n 10 go test -race -count=$(FLAKE_COUNT) -timeout $(FLAKE_TIMEOUT) $$p || failed="$$failed $$p"; \
	done; \
	if [ -n "$$failed" ]; then \
	  echo "tests failed in$$failed (-count=$(FLAKE_COUNT)): see the --- FAIL lines above; rerun one with go test -race -count=300 -run 'TestName$$' PKG"; exit 1; fi
