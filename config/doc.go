// Package config owns claude-relay's configuration: viper merges defaults, the
// config file, CLAUDE_RELAY_* environment variables and command-line flags into
// one typed Config, records where each value came from, validates it, and
// watches the file for the values that may change without a restart (tokens
// and the log level). No other package touches viper or the environment.
package config
