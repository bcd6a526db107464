package config

import (
	"log/slog"
	"net/url"
	"time"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/budget"
	"github.com/claude-relay/claude-relay/internal/policy"
	"github.com/claude-relay/claude-relay/internal/tokens"
)

// Config is the effective configuration. Zero values mean "use the default";
// Load always returns a fully defaulted, validated Config.
type Config struct {
	Backend   Backend
	Serve     Serve
	DataDir   string
	Workspace string // default cwd for runs (CLAUDE_WORKSPACE_PATH)
	Claude    Claude
	Approvals Approvals
	Spool     Spool
	Forwarder Forwarder
	Log       Log
	Budgets   Budgets // budgets.*: the helper's side of serve.budgets (budgets.go)
}

// Backend is where the forwarder delivers events.
type Backend struct {
	URL       string // empty: the embedded default backend
	Token     Secret
	TokenFile string
}

// Serve configures the reference backend.
type Serve struct {
	Addr   string
	DB     string // sqlite:PATH or a postgres:// URL
	Tokens []ServeToken
	// NotifyURL receives a push (ntfy-style POST) for each new pending
	// approval; empty: none. A secret: an ntfy topic URL is all it takes to
	// read the pushes.
	NotifyURL Secret
	// PublicURL is where people reach the dashboard, for links in pushes
	// (trailing slash trimmed); empty: http://<the address serve listens on>.
	PublicURL string
	// AllowedHosts are the host names serve answers to besides loopback
	// names, IP literals and PublicURL's host, against DNS rebinding;
	// "*.example.com" takes its subdomains.
	AllowedHosts []string
	// NotifyIncludeInput puts the approval's command or file (redacted) in
	// pushes; false: the tool and the project only.
	NotifyIncludeInput bool
	// MaxEventBytes is the largest event the backend takes, alone or in a
	// batch; MaxBatchBytes the largest batch body (at least MaxEventBytes).
	// Request bodies in flight are capped at 4 × MaxBatchBytes.
	MaxEventBytes, MaxBatchBytes int64
	// MaxStreamsPerToken is how many live streams (SSE) one token may hold
	// open at once.
	MaxStreamsPerToken int
	// AllowUncheckedLocalDecisions lets a decision from this machine
	// through when its sending process cannot be checked for a run (a
	// reverse proxy on this host, another user, no /proc); false: refused.
	AllowUncheckedLocalDecisions bool
	// Budgets are the spend caps (serve.budgets, issue 26; budgets.go).
	Budgets []budget.Rule
	// Policy is serve.policy: the central tool policy helpers fetch
	// (GET /api/policy) and enforce; nil: none.
	Policy []policy.Rule
}

// ServeToken is one serve.tokens entry: a token serve accepts, with a name
// (for the record of who decided what) and scopes (package tokens).
type ServeToken struct {
	Name   string // "" for a plain entry; the backend names it by position
	Token  Secret
	Scopes []tokens.Scope // empty: tokens.Default (ingest and read)
}

// Claude configures how the CLI is found and started.
type Claude struct {
	Path           string // empty: discovery
	Command        string // replaces Path and discovery, shell-split (a pinned npx, say); empty: none
	Model          string
	Args           []string
	Env            map[string]string
	DisableAPIKey  bool // ANTHROPIC_API_KEY is not passed to the CLI, so it uses its own login
	StartupTimeout time.Duration
	// StallTimeout is how long a turn may go without CLI output while no
	// tool runs before the watchdog interrupts it (CONTRACT §7).
	StallTimeout time.Duration
	// Billing is claude.billing: what a run may be billed to (the billing
	// guard; internal/billing).
	Billing billing.Policy
}

// Approvals configures tool approvals.
type Approvals struct {
	Timeout time.Duration
}

// Spool configures the forwarder's durable queue.
type Spool struct {
	Dir      string
	MaxBytes int64
	Fsync    string // interval (group fsync every 50ms) or always (every event)
}

// Forwarder configures delivery to the backend.
type Forwarder struct {
	DrainTimeout   time.Duration
	AttemptTimeout time.Duration
	MinBackoff     time.Duration
	MaxBackoff     time.Duration
	Batch          string // auto, always or never
	MaxBatch       int
}

// Log configures slog on stderr.
type Log struct {
	Level  slog.Level
	Format string // text or json
}

// Secret is a string that refuses to be printed: String, GoString, JSON and
// slog all render it as "***", so a token cannot leak through a stray %v.
type Secret string

const redacted = "***"

// Reveal returns the secret value; call it only where the value is used.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// LogValue keeps slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps encoders from printing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Secrets lists every configured secret value, for log redaction.
func (c *Config) Secrets() []string {
	var out []string
	if c.Backend.Token != "" {
		out = append(out, c.Backend.Token.Reveal())
	}
	for _, t := range c.Serve.Tokens {
		if t.Token != "" {
			out = append(out, t.Token.Reveal())
		}
	}
	if c.Serve.NotifyURL != "" {
		out = append(out, c.Serve.NotifyURL.Reveal())
	}
	if u, err := url.Parse(c.Serve.DB); err == nil {
		if u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				out = append(out, pw)
			}
		}
		for key, vals := range u.Query() {
			if secretParam(key) {
				for _, v := range vals {
					if v != "" {
						out = append(out, v)
					}
				}
			}
		}
	}
	for k, v := range c.Claude.Env {
		if SecretEnvName(k) && v != "" {
			out = append(out, v)
		}
	}
	return out
}
