package forwarder

import (
	"errors"
	"net/http"
	"net/url"
)

// transportErrorText renders a transport error without the URL's query.
func transportErrorText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + scrubLogValues([]any{"u", ue.URL})[1].(string) + ": " + ue.Err.Error()
	}
	return err.Error()
}

// retryLogger adapts slog to retryablehttp; it logs at debug and never
// prints a URL's query or any header (the token travels in one).
type retryLogger struct {
	log interface{ Debug(string, ...any) }
}

func (l retryLogger) Error(msg string, kv ...any) { l.log.Debug(msg, scrubLogValues(kv)...) }
func (l retryLogger) Info(msg string, kv ...any)  { l.log.Debug(msg, scrubLogValues(kv)...) }
func (l retryLogger) Debug(msg string, kv ...any) { l.log.Debug(msg, scrubLogValues(kv)...) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.log.Debug(msg, scrubLogValues(kv)...) }

// scrubLogValues is kv, key-value pairs, with URLs stripped of their query
// and user information and headers left out.
func scrubLogValues(kv []any) []any {
	out := make([]any, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case *url.URL:
			c := *x
			c.RawQuery, c.User = "", nil
			v = c.String()
		case string:
			if u, err := url.Parse(x); err == nil && u.Scheme != "" {
				u.RawQuery, u.User = "", nil
				v = u.String()
			}
		case http.Header:
			continue
		}
		out = append(out, kv[i], v)
	}
	return out
}
