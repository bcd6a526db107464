package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/claude-relay/claude-relay/internal/redact"
)

// Errors Load returns; the concrete error is a *ValidationError or wraps one of these.
var (
	ErrInvalid       = errors.New("invalid configuration")
	ErrConfigFile    = errors.New("cannot read config file")
	ErrTokenFile     = errors.New("cannot read backend.token_file")
	ErrNoHome        = errors.New("no home directory: set HOME or the XDG_* variables")
	ErrUnknownConfig = errors.New("unknown key in config file")
)

// ValidationError names the key, the bad value and what is allowed.
type ValidationError struct {
	Key     string
	Value   string // already redacted for secret keys
	Source  Origin
	Allowed string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid config: %s = %q (from %s): %s", e.Key, e.Value, e.Source, e.Allowed)
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Source says which layer a value came from.
type Source string

// The layers, lowest precedence first.
const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// Origin is where one key's value came from: the layer and its detail (the
// file path, the variable or the flag name).
type Origin struct {
	Source Source
	Detail string
}

func (o Origin) String() string {
	if o.Detail == "" {
		return string(o.Source)
	}
	return string(o.Source) + " " + o.Detail
}

// LoadOptions are the inputs of Load. Nothing is read from the process
// environment unless the caller passes it in.
type LoadOptions struct {
	File      string                           // --config; empty: the XDG default, which may be absent
	LookupEnv func(name string) (string, bool) // nil: no environment
	Flags     *pflag.FlagSet                   // may be nil
	FlagKeys  map[string]string                // config key → flag name
	Cwd       string                           // default for workspace
}

// Loaded is the result of Load: the Config, the origin of each key and the
// config file that was read (empty when none).
type Loaded struct {
	Config  *Config
	Origins map[string]Origin
	File    string
	// Path is the config file Load looked for, read or absent: --config,
	// else CLAUDE_RELAY_CONFIG, else the XDG default. A Watcher watches it,
	// so a file created after the start is still picked up.
	Path   string
	values map[string]any
}

// Value renders a key's effective value for display, secrets as "***".
func (l *Loaded) Value(name string) string {
	k, _ := lookupKey(name)
	if name == "claude.env" {
		return displayEnv(l.Config.Claude.Env)
	}
	s := display(l.values[name])
	if k.secret && s != "" {
		return redacted
	}
	return s
}

// Keys lists every key in display order.
func Keys() []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.name
	}
	return out
}

// Load merges defaults < file < env < flags into a validated Config.
func Load(opts LoadOptions) (*Loaded, error) {
	env := opts.LookupEnv
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	d, err := xdgDirs(env, opts.Cwd)
	if err != nil {
		return nil, err
	}
	v := viper.New()
	for _, k := range keys {
		v.SetDefault(k.name, k.def(d))
	}
	path := configPath(opts.File, d, env)
	file, err := readFile(v, path, opts.File != "")
	if err != nil {
		return nil, err
	}
	origins := map[string]Origin{}
	for _, k := range keys {
		origins[k.name] = origin(v, k, opts, env, file)
		if origins[k.name].Source == FromEnv {
			val, _ := env(origins[k.name].Detail)
			v.Set(k.name, val)
		}
		if name, ok := opts.FlagKeys[k.name]; ok && opts.Flags != nil && opts.Flags.Lookup(name) != nil {
			if err := v.BindPFlag(k.name, opts.Flags.Lookup(name)); err != nil {
				return nil, fmt.Errorf("bind flag --%s: %w", name, err)
			}
		}
	}
	l := &Loaded{Config: &Config{}, Origins: origins, File: file, Path: path, values: map[string]any{}}
	for _, k := range keys {
		raw := v.Get(k.name)
		l.values[k.name] = raw
		if err := k.apply(l.Config, raw); err != nil {
			val := display(raw)
			switch {
			case k.secret:
				val = redacted
			case k.name == "claude.env":
				val = redactEnvText(val)
			default:
				// A value in the wrong key, or a token pasted into a URL:
				// an error message must not be where a secret leaks.
				val = redact.Shapes(val)
			}
			return nil, &ValidationError{Key: k.name, Value: val, Source: origins[k.name], Allowed: err.Error()}
		}
	}
	if err := derive(l, d); err != nil {
		return nil, err
	}
	return l, nil
}

// derive fills values that default to other values.
func derive(l *Loaded, d dirs) error {
	c := l.Config
	if c.Backend.Token == "" && c.Backend.TokenFile != "" {
		b, err := os.ReadFile(c.Backend.TokenFile)
		if err != nil {
			return fmt.Errorf("%w %s: %w (fix the path or set backend.token)", ErrTokenFile, c.Backend.TokenFile, err)
		}
		c.Backend.Token = Secret(strings.TrimSpace(string(b)))
	}
	if len(c.Serve.Tokens) == 0 && c.Backend.Token != "" {
		c.Serve.Tokens = []ServeToken{{Name: "backend.token", Token: c.Backend.Token}}
	}
	if c.Serve.DB == "" {
		c.Serve.DB = "sqlite:" + filepath.Join(c.DataDir, "relay.db")
		l.values["serve.db"] = c.Serve.DB
	}
	if c.Forwarder.MinBackoff > c.Forwarder.MaxBackoff {
		return &ValidationError{Key: "forwarder.min_backoff", Value: c.Forwarder.MinBackoff.String(),
			Source: l.Origins["forwarder.min_backoff"], Allowed: "at most forwarder.max_backoff (" + c.Forwarder.MaxBackoff.String() + ")"}
	}
	return nil
}

func origin(v *viper.Viper, k key, opts LoadOptions, env func(string) (string, bool), file string) Origin {
	if name, ok := opts.FlagKeys[k.name]; ok && opts.Flags != nil {
		if f := opts.Flags.Lookup(name); f != nil && f.Changed {
			return Origin{FromFlag, "--" + name}
		}
	}
	for _, name := range append([]string{EnvName(k.name)}, k.env...) {
		if _, ok := env(name); ok {
			return Origin{FromEnv, name}
		}
	}
	if file != "" && v.InConfig(k.name) {
		return Origin{FromFile, file}
	}
	return Origin{Source: FromDefault}
}

// configPath is the config file to read: the explicit --config, else
// CLAUDE_RELAY_CONFIG, else the XDG default.
func configPath(explicit string, d dirs, env func(string) (string, bool)) string {
	if explicit != "" {
		return explicit
	}
	if f, ok := env("CLAUDE_RELAY_CONFIG"); ok && f != "" {
		return f
	}
	return filepath.Join(d.configHome, "claude-relay", "config.yaml")
}

// readFile reads the config file into v and returns its path, or "" when it
// is absent. An explicit --config must exist; the other paths may be absent.
// Unknown keys are errors: a typo silently ignored is a setting the user
// thinks they have.
func readFile(v *viper.Viper, file string, explicit bool) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrConfigFile, file, err)
	}
	ext := strings.TrimPrefix(filepath.Ext(file), ".")
	if ext == "" || ext == "yml" {
		ext = "yaml"
	}
	v.SetConfigType(ext)
	if err := v.MergeConfig(bytes.NewReader(b)); err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrConfigFile, file, err)
	}
	known := Keys()
	for _, k := range v.AllKeys() {
		if !slices.Contains(known, k) && !strings.HasPrefix(k, "claude.env.") {
			return "", fmt.Errorf("%w %s: %q (known keys: %s)", ErrUnknownConfig, file, k, strings.Join(known, ", "))
		}
	}
	return file, nil
}

func xdgDirs(env func(string) (string, bool), cwd string) (dirs, error) {
	d := dirs{cwd: cwd}
	d.home, _ = env("HOME")
	pick := func(name, rel string) (string, error) {
		if p, ok := env(name); ok && filepath.IsAbs(p) {
			return p, nil
		}
		if d.home == "" {
			return "", ErrNoHome
		}
		return filepath.Join(d.home, rel), nil
	}
	var err error
	if d.configHome, err = pick("XDG_CONFIG_HOME", ".config"); err != nil {
		return d, err
	}
	if d.dataHome, err = pick("XDG_DATA_HOME", ".local/share"); err != nil {
		return d, err
	}
	d.stateHome, err = pick("XDG_STATE_HOME", ".local/state")
	return d, err
}

func display(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = display(x)
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(t, ",")
	case map[string]any:
		names := make([]string, 0, len(t))
		for k := range t {
			names = append(names, k)
		}
		slices.Sort(names)
		for i, k := range names {
			names[i] = strings.ToUpper(k) + "=" + display(t[k])
		}
		return strings.Join(names, ",")
	case string:
		return redactURL(t)
	default:
		return fmt.Sprint(t)
	}
}

// RedactURL hides the password of a URL such as postgres://u:pw@host/db.
func RedactURL(s string) string { return redactURL(s) }

func redactURL(s string) string {
	if !strings.Contains(s, "://") || (!strings.Contains(s, "@") && !strings.Contains(s, "?")) {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		// Unparseable but credential-shaped: hide everything before the host.
		scheme, rest, _ := strings.Cut(s, "://")
		_, host, _ := strings.Cut(rest, "@")
		return scheme + "://" + redacted + "@" + host
	}
	q := u.Query()
	for key := range q {
		if secretParam(key) {
			q.Set(key, redacted)
		}
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secretParam reports whether a URL query parameter carries a credential
// (PostgreSQL accepts password=... in the query).
func secretParam(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "token") || k == "key"
}

// redactEnvText hides every value of claude.env text that did not parse,
// keeping only what looks like variable names: it did not parse, so which
// part is a name and which a credential is anyone's guess (a JSON object
// of them, say).
func redactEnvText(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if name, _, ok := strings.Cut(p, "="); ok && envName.MatchString(strings.TrimSpace(name)) {
			parts[i] = name + "=" + redacted
		} else {
			parts[i] = redacted
		}
	}
	return strings.Join(parts, ",")
}

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// displayEnv shows claude.env with credential-looking values hidden.
func displayEnv(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for i, k := range names {
		v := m[k]
		if SecretEnvName(k) && v != "" {
			v = redacted
		}
		names[i] = k + "=" + v
	}
	return strings.Join(names, ",")
}
