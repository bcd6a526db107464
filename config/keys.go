package config

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"

	"github.com/claude-relay/claude-relay/internal/billing"
	"github.com/claude-relay/claude-relay/internal/launch"
)

// key describes one configuration key: its default, how its raw value is
// decoded and checked, and where it lands in Config.
type key struct {
	name   string
	secret bool
	env    []string // extra environment names, beside CLAUDE_RELAY_<NAME>
	def    func(d dirs) any
	apply  func(c *Config, raw any) error
}

// dirs are the XDG locations defaults derive from.
type dirs struct {
	home, configHome, dataHome, stateHome, cwd string
}

func constant(v any) func(dirs) any { return func(dirs) any { return v } }

// minMaxEventBytes is the smallest serve.max_event_bytes: the stand-in the
// forwarder posts for an event over the limit (a few KiB) must fit.
const minMaxEventBytes = 64 << 10

// keys is every key Load knows, in the order `claude-relay config` prints.
var keys = []key{
	{name: "backend.url", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil && s != "" {
			err = checkURL(s)
		}
		c.Backend.URL = strings.TrimRight(s, "/")
		return err
	}},
	{name: "backend.token", secret: true, def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		c.Backend.Token = Secret(strings.TrimSpace(s))
		return err
	}},
	{name: "backend.token_file", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		c.Backend.TokenFile = s
		return err
	}},
	{name: "serve.addr", def: constant("127.0.0.1:8787"), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil {
			err = checkAddr(s)
		}
		c.Serve.Addr = s
		return err
	}},
	{name: "serve.db", def: func(d dirs) any { return "" }, apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil && s != "" && !strings.HasPrefix(s, "sqlite:") &&
			!strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
			err = fmt.Errorf("allowed: sqlite:PATH or a postgres:// URL")
		}
		c.Serve.DB = s
		return err
	}},
	{name: "serve.tokens", secret: true, def: constant(""), apply: func(c *Config, raw any) error {
		t, err := serveTokens(raw)
		c.Serve.Tokens = t
		return err
	}},
	{name: "serve.notify_url", secret: true, def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil && s != "" {
			err = checkHTTPURL(s, true)
		}
		c.Serve.NotifyURL = Secret(s)
		return err
	}},
	{name: "serve.notify_include_input", def: constant(false), apply: func(c *Config, raw any) error {
		b, err := boolean(raw)
		c.Serve.NotifyIncludeInput = b
		return err
	}},
	{name: "serve.allow_unchecked_local_decisions", def: constant(false), apply: func(c *Config, raw any) error {
		b, err := boolean(raw)
		c.Serve.AllowUncheckedLocalDecisions = b
		return err
	}},
	{name: "serve.public_url", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil && s != "" {
			err = checkURL(s)
		}
		c.Serve.PublicURL = strings.TrimRight(s, "/")
		return err
	}},
	{name: "serve.allowed_hosts", def: constant(""), apply: func(c *Config, raw any) error {
		h, err := hostNames(raw)
		c.Serve.AllowedHosts = h
		return err
	}},
	policyKey,
	{name: "serve.max_event_bytes", def: constant("8MiB"), apply: func(c *Config, raw any) error {
		n, err := byteSize(raw)
		if err == nil && n < minMaxEventBytes {
			err = fmt.Errorf("allowed: a size of at least 64KiB, like 8MiB")
		}
		c.Serve.MaxEventBytes = n
		return err
	}},
	// After serve.max_event_bytes, which it is checked against.
	{name: "serve.max_batch_bytes", def: constant("32MiB"), apply: func(c *Config, raw any) error {
		n, err := byteSize(raw)
		if err == nil && n < c.Serve.MaxEventBytes {
			err = fmt.Errorf("allowed: a size of at least serve.max_event_bytes (%d bytes)", c.Serve.MaxEventBytes)
		}
		c.Serve.MaxBatchBytes = n
		return err
	}},
	{name: "serve.max_streams_per_token", def: constant(32), apply: func(c *Config, raw any) error {
		n, err := positiveInt(raw)
		c.Serve.MaxStreamsPerToken = n
		return err
	}},
	{name: "data_dir", def: func(d dirs) any { return filepath.Join(d.dataHome, "claude-relay") }, apply: func(c *Config, raw any) error {
		s, err := path(raw)
		c.DataDir = s
		return err
	}},
	{name: "workspace", env: []string{"CLAUDE_WORKSPACE_PATH"}, def: func(d dirs) any { return d.cwd }, apply: func(c *Config, raw any) error {
		s, err := path(raw)
		c.Workspace = s
		return err
	}},
	{name: "claude.path", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		c.Claude.Path = s
		return err
	}},
	{name: "claude.model", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		c.Claude.Model = s
		return err
	}},
	{name: "claude.args", def: constant(""), apply: func(c *Config, raw any) error {
		l, err := args(raw)
		c.Claude.Args = l
		return err
	}},
	{name: "claude.env", def: constant(""), apply: func(c *Config, raw any) error {
		m, err := envMap(raw)
		c.Claude.Env = m
		return err
	}},
	{name: "claude.command", def: constant(""), apply: func(c *Config, raw any) error {
		s, err := str(raw)
		if err == nil && s != "" {
			// Checked here so a bad quote fails at start, naming the key,
			// not at the first run.
			if _, _, perr := launch.Program("", s); perr != nil {
				err = fmt.Errorf("allowed: a command line split like a shell does, quotes closed (%w)", perr)
			}
		}
		c.Claude.Command = s
		return err
	}},
	{name: "claude.disable_api_key", def: constant(false), apply: func(c *Config, raw any) error {
		b, err := boolean(raw)
		c.Claude.DisableAPIKey = b
		return err
	}},
	{name: "claude.startup_timeout", def: constant("30s"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Claude.StartupTimeout = d
		return err
	}},
	{name: "claude.stall_timeout", def: constant("5m"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Claude.StallTimeout = d
		return err
	}},
	// The billing guard (issue 26 item 2): which credentials a run may be
	// billed to (internal/billing).
	{name: "claude.billing", def: constant("any"), apply: func(c *Config, raw any) error {
		s, err := enum(raw, "any", "subscription", "api_key")
		c.Claude.Billing = billing.Policy(s)
		return err
	}},
	{name: "approvals.timeout", def: constant("10m"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Approvals.Timeout = d
		return err
	}},
	{name: "spool.dir", def: func(d dirs) any { return filepath.Join(d.stateHome, "claude-relay", "spool") }, apply: func(c *Config, raw any) error {
		s, err := path(raw)
		c.Spool.Dir = s
		return err
	}},
	{name: "spool.max_bytes", def: constant("1GiB"), apply: func(c *Config, raw any) error {
		n, err := byteSize(raw)
		c.Spool.MaxBytes = n
		return err
	}},
	{name: "spool.fsync", def: constant("interval"), apply: func(c *Config, raw any) error {
		s, err := enum(raw, "interval", "always")
		c.Spool.Fsync = s
		return err
	}},
	{name: "forwarder.drain_timeout", def: constant("10s"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Forwarder.DrainTimeout = d
		return err
	}},
	{name: "forwarder.attempt_timeout", def: constant("10s"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Forwarder.AttemptTimeout = d
		return err
	}},
	{name: "forwarder.min_backoff", def: constant("100ms"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Forwarder.MinBackoff = d
		return err
	}},
	{name: "forwarder.max_backoff", def: constant("30s"), apply: func(c *Config, raw any) error {
		d, err := duration(raw)
		c.Forwarder.MaxBackoff = d
		return err
	}},
	{name: "forwarder.batch", def: constant("auto"), apply: func(c *Config, raw any) error {
		s, err := enum(raw, "auto", "always", "never")
		c.Forwarder.Batch = s
		return err
	}},
	{name: "forwarder.max_batch", def: constant(200), apply: func(c *Config, raw any) error {
		n, err := positiveInt(raw)
		c.Forwarder.MaxBatch = n
		return err
	}},
	{name: "log.level", def: constant("info"), apply: func(c *Config, raw any) error {
		s, err := enum(raw, "debug", "info", "warn", "error")
		if err == nil {
			err = c.Log.Level.UnmarshalText([]byte(s))
		}
		return err
	}},
	{name: "log.format", def: constant("text"), apply: func(c *Config, raw any) error {
		s, err := enum(raw, "text", "json")
		c.Log.Format = s
		return err
	}},
}

func lookupKey(name string) (key, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

// EnvName is the CLAUDE_RELAY_ variable for a key: prefix, upper case, '.' → '_'.
func EnvName(name string) string {
	return "CLAUDE_RELAY_" + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

func str(raw any) (string, error) {
	switch raw.(type) {
	case map[string]any, []any:
		return "", fmt.Errorf("allowed: a single value, not a list or map")
	}
	s, err := cast.ToStringE(raw)
	return strings.TrimSpace(s), err
}

func path(raw any) (string, error) {
	s, err := str(raw)
	if err == nil && s != "" {
		s = filepath.Clean(s)
		if !filepath.IsAbs(s) {
			return s, fmt.Errorf("allowed: an absolute path")
		}
	}
	return s, err
}

func duration(raw any) (time.Duration, error) {
	s, err := str(raw)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("allowed: a positive duration with a unit, like 500ms, 30s or 10m")
	}
	return d, nil
}

func boolean(raw any) (bool, error) {
	if s, ok := raw.(string); ok {
		raw = strings.TrimSpace(s)
	}
	b, err := cast.ToBoolE(raw)
	if err != nil {
		return false, fmt.Errorf("allowed: true or false")
	}
	return b, nil
}

func positiveInt(raw any) (int, error) {
	n, err := cast.ToIntE(raw)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("allowed: a positive whole number")
	}
	return n, nil
}

func enum(raw any, allowed ...string) (string, error) {
	s, err := str(raw)
	if err != nil {
		return "", err
	}
	s = strings.ToLower(s)
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return s, fmt.Errorf("allowed: %s", strings.Join(allowed, ", "))
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func byteSize(raw any) (int64, error) {
	bad := fmt.Errorf("allowed: a positive size like 1073741824, 512MiB or 2GB")
	s, err := str(raw)
	if err != nil {
		return 0, bad
	}
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, bad
	}
	return n * mult, nil
}

// list accepts a YAML list or a comma-separated string (the env form).
func list(raw any) ([]string, error) {
	var items []string
	switch v := raw.(type) {
	case []any:
		for _, x := range v {
			s, err := str(x)
			if err != nil {
				return nil, err
			}
			items = append(items, s)
		}
	case []string:
		items = v
	default:
		s, err := str(raw)
		if err != nil {
			return nil, err
		}
		items = strings.Split(s, ",")
	}
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// args accepts a YAML list, a JSON array string, or a whitespace-separated
// string; arguments may contain commas, so commas do not split here.
func args(raw any) ([]string, error) {
	if s, ok := raw.(string); ok {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "[") {
			var out []string
			if err := json.Unmarshal([]byte(s), &out); err != nil {
				return nil, fmt.Errorf("allowed: a JSON array of strings or space-separated words")
			}
			return out, nil
		}
		return strings.Fields(s), nil
	}
	return list(raw)
}

// envMap accepts a YAML map, a YAML list of K=V, or a comma-separated K=V
// string. Map keys are upper-cased because viper lower-cases them when it
// reads a file and environment variable names are conventionally upper case.
func envMap(raw any) (map[string]string, error) {
	out := map[string]string{}
	if m, ok := raw.(map[string]any); ok {
		for k, v := range m {
			s, err := str(v)
			if err != nil {
				return nil, err
			}
			out[strings.ToUpper(k)] = s
		}
		return out, nil
	}
	items, err := list(raw)
	if err != nil {
		return nil, err
	}
	for _, kv := range items {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("allowed: NAME=value pairs")
		}
		out[k] = v
	}
	return out, nil
}

func checkURL(s string) error { return checkHTTPURL(s, false) }

// checkHTTPURL accepts an http or https URL with a host; credentials in it
// only when userinfo is true (a push service may take them there).
func checkHTTPURL(s string, userinfo bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("allowed: an http:// or https:// URL with a host")
	}
	if u.User != nil && !userinfo {
		return fmt.Errorf("allowed: a URL without credentials (use backend.token)")
	}
	return nil
}

// hostName is a DNS name, optionally "*." for its subdomains.
var hostName = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

// hostNames reads serve.allowed_hosts: a list of host names, lower-cased.
func hostNames(raw any) ([]string, error) {
	items, err := list(raw)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, h := range items {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		if !hostName.MatchString(h) {
			return nil, fmt.Errorf("allowed: host names like relay.example.com or *.example.com, without scheme, port or path (%q is not one)", h)
		}
		out = append(out, h)
	}
	return out, nil
}

func checkAddr(s string) error {
	_, port, err := net.SplitHostPort(s)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return fmt.Errorf("allowed: host:port, like 127.0.0.1:8787")
	}
	return nil
}

// SecretEnvName reports whether an environment variable named so likely
// holds a credential, so its value is treated as a secret in claude.env.
func SecretEnvName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
