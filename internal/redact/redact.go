// Package redact takes secrets out of text that leaves the process: log
// lines and push notifications. It knows two kinds: the secrets the
// configuration names (tokens, passwords), replaced wherever they appear
// once they are long enough to be told from ordinary words, and
// credential-shaped words nobody configured (a GitHub token in a Bash
// command, mysql's -pPASSWORD, a password in a URL, a long random word).
//
// Redaction is best effort by nature: it hides what looks like a secret,
// so text that must never carry one (a push) should leave the input out
// rather than rely on it.
package redact

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "***"

// MinSecretLen is the shortest configured secret Text replaces. A shorter
// one would turn ordinary words into garbage (a token "a" made every
// "backend" in the log "b***ckend") while hiding nothing worth hiding:
// configured tokens must be at least 16 characters anyway.
const MinSecretLen = 8

// Text replaces in s every configured secret at least MinSecretLen long,
// then every credential-shaped word (Shapes).
func Text(s string, secrets []string) string {
	return Shapes(Known(s, long(secrets)))
}

// long keeps the secrets Text replaces.
func long(secrets []string) []string {
	out := secrets[:0:0]
	for _, s := range secrets {
		if len(s) >= MinSecretLen {
			out = append(out, s)
		}
	}
	return out
}

// Known replaces every non-empty secret in s, longest first (so a secret
// that contains another is replaced whole), whatever its length: for
// callers that know their secrets are not ordinary words (the parts of a
// URL in that URL's own error messages).
func Known(s string, secrets []string) string {
	var hit []string
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			hit = append(hit, sec)
		}
	}
	if len(hit) == 0 {
		return s
	}
	slices.SortFunc(hit, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, sec := range hit {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}

// rule is one credential shape: re finds it; the text of group keep (a
// variable's name, a flag, a URL's user; 0: none) stays before the mask,
// and suffix after it (a closing quote).
type rule struct {
	re     *regexp.Regexp
	keep   int
	suffix string
}

// secretName is what names a secret in an assignment: the name ends so.
const secretName = `(?:token|secret|secret_?key|passw(?:or)?d|_pwd|api_?key|access_?key|private_?key|credentials?|auth)`

// quotedOrWord is a shell value: quoted, or up to a space, quote or
// separator.
const quotedOrWord = `(?:"[^"]*"|'[^']*'|[^\s"'&;|]+)`

// rules are the shapes Shapes replaces, in order. They are compiled on
// first use: every process links this package (logging redacts), and most
// (`version`, `hook-post`) never redact a line.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		// Provider tokens, whole: GitHub (classic and fine-grained), GitLab,
		// Slack, Anthropic and OpenAI style sk-…, ours, AWS access key IDs.
		{re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`)},
		{re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
		{re: regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9-]{10,}`)},
		{re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{12,}`)},
		{re: regexp.MustCompile(`\bcrly_[A-Za-z0-9_-]{8,}`)},
		{re: regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
		// GITHUB_TOKEN=…, SECRET=…, DB_PASSWORD="…", MYSQL_PWD=…, ?auth=…:
		// the name stays, the value goes. The name must end in the secret
		// word, so max_tokens=5 stays.
		{re: regexp.MustCompile(`(?i)(\b[a-z0-9_]*` + secretName + `=)` + quotedOrWord), keep: 1},
		// The JSON form: "password": "…".
		{re: regexp.MustCompile(`(?i)("[a-z0-9_-]*` + secretName + `"\s*:\s*")(?:[^"\\]|\\.)*"`), keep: 1, suffix: `"`},
		// --password=…, --password …, and the like.
		{re: regexp.MustCompile(`(?i)(--(?:password|passwd|pass|token|secret|api-key|apikey)(?:=|\s+))` + quotedOrWord), keep: 1},
		// mysql -pPASSWORD (glued to -p; "-p" alone prompts), sshpass -p PW.
		// Only after those commands: elsewhere -p… is an option (find -print0).
		{re: regexp.MustCompile(`(?i)(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)\b[^|;&\n]*?\s-p)` + quotedOrWord), keep: 1},
		{re: regexp.MustCompile(`(\bsshpass\s+-p\s*)` + quotedOrWord), keep: 1},
		// scheme://user:password@host: the user stays.
		{re: regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:)[^\s/@]+@`), keep: 1, suffix: "@"},
		// Authorization: Bearer …, Basic …; a Bearer credential anywhere.
		{re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`), keep: 1},
		{re: regexp.MustCompile(`(?i)(\bauthorization:\s*basic\s+)[A-Za-z0-9+/=]+`), keep: 1},
	}
})

// minShape is the shortest text any rule can match ("SECRET=x" is 8).
const minShape = 8

// Shapes replaces the credential-shaped words in s: tokens with a known
// prefix (ghp_, github_pat_, glpat-, xoxb-, sk-, crly_, AKIA…), the values
// of secret-named assignments and flags (GITHUB_TOKEN=…, "password": …,
// --password=…, mysql's -p…), a URL's password, a Bearer credential, and
// long high-entropy words (HighEntropy).
func Shapes(s string) string {
	if len(s) < minShape {
		return s
	}
	for _, r := range rules() {
		s = replace(s, r)
	}
	var b strings.Builder
	last := 0
	for _, m := range entropyWords().FindAllStringIndex(s, -1) {
		w := s[m[0]:m[1]]
		// A named digest ("sha256:<hex>", as approvals' input_sha256 and
		// the helper's refusals print it) is no secret.
		if !HighEntropy(w) || strings.HasSuffix(s[:m[0]], digestPrefix) {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(Mask)
		last = m[1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// digestPrefix names a SHA-256 digest that may be shown.
const digestPrefix = "sha256:"

func replace(s string, r rule) string {
	if r.keep == 0 {
		return r.re.ReplaceAllLiteralString(s, Mask)
	}
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		// Up to the end of the kept group, then the mask for the rest.
		b.WriteString(s[last:m[2*r.keep+1]])
		b.WriteString(Mask)
		b.WriteString(r.suffix)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// entropyWords are the candidates for HighEntropy: runs of the base64 and
// hex alphabets ('=' only as padding), at least minEntropyLen long;
// compiled on first use, like rules.
var entropyWords = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9+/_-]{32,}={0,2}`) })

// Thresholds of HighEntropy, in bits per character of Shannon entropy. A
// random 32-character hex string scores 3.0 to 3.9, a random base64 one
// over 4.0; English words, identifiers and paths stay under (and a path is
// told apart by its leading slash).
const (
	minEntropyLen = 32
	hexEntropy    = 3.0
	wordEntropy   = 3.9
)

// HighEntropy reports whether w looks like a random secret: at least 32
// characters of the base64 or hex alphabet, with a Shannon entropy that
// random data has and words do not, and digits beside letters (of both
// cases unless w is hex). UUIDs (IDs, not secrets) and absolute paths do
// not count.
func HighEntropy(w string) bool {
	w = strings.TrimRight(w, "=")
	if len(w) < minEntropyLen || strings.HasPrefix(w, "/") || isUUID(w) {
		return false
	}
	var upper, lower, digits bool
	hex := true
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'z':
			lower, hex = true, hex && c <= 'f'
		case c >= 'A' && c <= 'Z':
			upper, hex = true, hex && c <= 'F'
		default:
			hex = false
		}
	}
	switch {
	case !digits || !(upper || lower):
		return false
	case hex:
		return entropy(w) >= hexEntropy
	case !upper || !lower:
		return false // snake_case_words_2, base36: too like an identifier
	}
	return entropy(w) >= wordEntropy
}

// entropy is w's Shannon entropy in bits per byte.
func entropy(w string) float64 {
	var counts [256]int
	for i := 0; i < len(w); i++ {
		counts[w[i]]++
	}
	n := float64(len(w))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// isUUID reports the 8-4-4-4-12 hex form.
func isUUID(w string) bool {
	if len(w) != 36 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
