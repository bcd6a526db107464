// Package config owns claude-relay's configuration: viper merges defaults, the
// config file, CLAUDE_RELAY_* environment variables and command-line flags into
// one typed Config, records where each value came from, validates it, and
// watches the file for the values that may change without a restart (tokens
// and the log level). No other package touches viper or the environment.
//
// # serve.tokens
//
// The tokens `serve` accepts, each with scopes (package tokens): ingest
// (post events), read (API, streams, dashboard), approve (decide approvals;
// implies read) and admin (everything). In the config file, a list whose
// entries are either a plain token, which keeps its old meaning with the
// scopes ingest and read, or a mapping with the token, an optional name and
// optional scopes (a list, or one string such as "approve+read"):
//
//	serve:
//	  tokens:
//	    - 3f9a…              # ingest, read: what the helper posts with
//	    - token: 8c1e…
//	      name: phone         # decisions show as "dashboard:phone" / "api:phone"
//	      scopes: [approve]   # approve implies read
//	    - {token: 77d0…, name: ops, scopes: [admin]}
//
// In the environment, CLAUDE_RELAY_SERVE_TOKENS is either comma-separated
// plain tokens (TOKEN1,TOKEN2: ingest and read each, as before) or, when it
// starts with '[', a JSON array of the same entries:
//
//	CLAUDE_RELAY_SERVE_TOKENS='["3f9a…",{"token":"8c1e…","name":"phone","scopes":["approve"]}]'
//
// The JSON form is the only one with scopes: a short form such as
// NAME:SCOPES:TOKEN would be ambiguous for a token holding ':'. Names are
// optional, unique, and made of letters, digits, '.', '_' and '-'. Each
// token needs at least MinTokenLen (16) characters, random
// (`openssl rand -hex 32`): a shorter one is refused at start.
// Without serve.tokens, backend.token is accepted with ingest and read.
// Tokens made with `claude-relay token create` live in the data dir's
// tokens.json, hashed, beside these; serve reads both on every request.
//
// # serve.notify_url and serve.public_url
//
// serve.notify_url, when set, receives an ntfy-style POST for each new
// pending approval (the tool, the project, a link; never a token, and the
// command or file only with serve.notify_include_input, redacted); it is a
// secret, since an ntfy topic URL is all one needs to read the pushes.
// serve.public_url is the dashboard's address as people reach it (behind a
// proxy, say), for that link, for the dashboard's same-origin check, and,
// when https, for a Secure __Host- login cookie; empty means
// http://<the address serve listens on>. serve.allowed_hosts lists more
// names the dashboard answers to (a request naming any other host gets 421,
// against DNS rebinding).
package config
