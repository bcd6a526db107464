package wire

// The audit trail's HTTP terms (GET /api/audit), shared by the backend
// that serves it and `claude-relay audit export`, which must not link the
// backend.
const (
	// AuditNextHeader is the HTTP trailer GET /api/audit ends with: the
	// position to continue after (the last record's cursor, or the after
	// the request gave when the page is empty). Each record carries its
	// cursor too, so a client that ignores trailers loses nothing.
	AuditNextHeader = "X-Audit-Next"
	// MaxAuditPage bounds a page: a request is one read transaction.
	MaxAuditPage = 5000
)
