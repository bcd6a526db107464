package push

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/claude-relay/claude-relay/internal/redact"
)

// describeURL returns what logs may show of raw (scheme://host), the parts
// they must not, and why raw cannot be used ("" if it can). Neither the
// reason nor the target ever quotes raw: url.Parse's errors do, so they are
// not passed on.
func describeURL(raw string) (target string, secrets []string, bad string) {
	if raw == "" {
		return "", nil, ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)", nil, "it is not a valid URL"
	}
	target = u.Scheme + "://" + u.Host
	if u.User != nil {
		secrets = append(secrets, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	secrets = append(secrets, u.EscapedPath(), u.Path, u.RawQuery, u.EscapedFragment())
	secrets = slices.DeleteFunc(secrets, func(s string) bool {
		// Too short to redact without mangling an error text: the "/" of
		// a bare host, an empty query.
		return len(s) < 2
	})
	// Longest first, so a part of a longer secret is not replaced first
	// and leaves the rest of it behind.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return target, secrets, fmt.Sprintf("its scheme is %q, not http or https", u.Scheme)
	case u.Host == "":
		return target, secrets, "it has no host"
	}
	return target, secrets, ""
}

// redact renders err for a log without any secret part of the URL: a
// transport error is a *url.Error quoting the URL (only its password
// masked), so the URL is left out and anything else is scrubbed.
func (c *Client) redact(err error) string {
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = ue.Op + " " + c.target + ": " + ue.Err.Error()
	}
	// Known, not the log redactor: a topic may be short ("/t"), and it is
	// a secret all the same in this URL's own error texts.
	return redact.Known(msg, c.secrets)
}
