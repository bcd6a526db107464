package discovery

import (
	"cmp"
	"regexp"
	"strings"
)

// versionPattern matches a semantic version (with optional "v", prerelease
// and build metadata) anywhere in text such as "2.1.330 (Claude Code)".
var versionPattern = regexp.MustCompile(
	`v?(\d+\.\d+\.\d+` +
		`(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?` +
		`(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)`)

var fullVersionPattern = regexp.MustCompile(`^` + versionPattern.String() + `$`)

// ExtractVersion returns the first semantic version in s, without a leading
// "v", or false if there is none.
func ExtractVersion(s string) (string, bool) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// CompareVersions orders two semantic versions per semver 2.0.0: it returns
// -1, 0 or +1. A prerelease sorts before its release (1.0.0-beta < 1.0.0) and
// build metadata is ignored. Strings that are not versions sort before all
// versions and equal to each other.
func CompareVersions(a, b string) int {
	va, okA := parseVersion(a)
	vb, okB := parseVersion(b)
	if !okA || !okB {
		return boolCmp(okA, okB)
	}
	for i := range va.core {
		if c := compareNumeric(va.core[i], vb.core[i]); c != 0 {
			return c
		}
	}
	return comparePrerelease(va.pre, vb.pre)
}

type version struct {
	core [3]string
	pre  []string
}

func parseVersion(s string) (version, bool) {
	if !fullVersionPattern.MatchString(s) {
		return version{}, false
	}
	s = strings.TrimPrefix(s, "v")
	s, _, _ = strings.Cut(s, "+")
	s, pre, hasPre := strings.Cut(s, "-")
	var v version
	copy(v.core[:], strings.Split(s, "."))
	if hasPre {
		v.pre = strings.Split(pre, ".")
	}
	return v, true
}

// comparePrerelease: no prerelease ranks higher; otherwise identifiers are
// compared left to right and a shorter list that is a prefix ranks lower.
func comparePrerelease(a, b []string) int {
	if len(a) == 0 || len(b) == 0 {
		return boolCmp(len(a) == 0, len(b) == 0)
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareIdent(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// compareIdent: numeric identifiers compare numerically and rank below
// alphanumeric ones, which compare in ASCII order.
func compareIdent(a, b string) int {
	na, nb := isNumeric(a), isNumeric(b)
	switch {
	case na && nb:
		return compareNumeric(a, b)
	case na != nb:
		return boolCmp(nb, na)
	default:
		return strings.Compare(a, b)
	}
}

// compareNumeric compares decimal strings of any length without overflow.
func compareNumeric(a, b string) int {
	a, b = trimZeros(a), trimZeros(b)
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func trimZeros(s string) string {
	t := strings.TrimLeft(s, "0")
	if t == "" && s != "" {
		return "0"
	}
	return t
}

func isNumeric(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}
