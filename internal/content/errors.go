package content

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinels a *BlockError wraps, for callers that react by kind (for
// example to map them to a rejection reason).
var (
	// ErrNoContent: neither prompt text nor blocks.
	ErrNoContent = errors.New("no prompt content")
	// ErrInvalidBlock: unknown type, a missing or stray field, blank text.
	ErrInvalidBlock = errors.New("invalid content block")
	// ErrTooLarge: over a per-image, per-file or total limit.
	ErrTooLarge = errors.New("content too large")
	// ErrBadBase64: image data that does not decode.
	ErrBadBase64 = errors.New("invalid base64")
	// ErrNotImage: bytes that are not a PNG, JPEG, GIF or WebP image.
	ErrNotImage = errors.New("not a supported image")
	// ErrMediaType: an unsupported media_type, or one the bytes contradict.
	ErrMediaType = errors.New("wrong media type")
	// ErrNotText: a file block whose file is not UTF-8 text.
	ErrNotText = errors.New("not a text file")
	// ErrNotFile: a path that names a directory or another non-regular file.
	ErrNotFile = errors.New("not a regular file")
)

// promptIndex is BlockError.Index for the prompt text itself.
const promptIndex = -1

// BlockError is what Build refuses, naming the block (and field) at fault.
type BlockError struct {
	// Index is the block's position in the content list; -1 means the
	// prompt text or the prompt as a whole.
	Index int
	// Field is the field at fault ("type", "text", "media_type", "data",
	// "path"), or "" for the block as a whole.
	Field string
	// Err is one of the Err sentinels or, for a path that cannot be read,
	// the file system's error.
	Err error
	msg string
}

func (e *BlockError) Error() string { return e.msg }

func (e *BlockError) Unwrap() error { return e.Err }

// blockErr builds the message `content[i].field "value"` + detail; the
// detail starts with its own separator (": no such file", " is empty", " but
// the data is a JPEG"). The value is quoted only when not empty (data is
// never quoted: it can be megabytes) and cut to maxQuoted bytes.
func blockErr(i int, field, value string, err error, format string, args ...any) *BlockError {
	where := "prompt"
	if i != promptIndex {
		where = fmt.Sprintf("content[%d]", i)
	}
	if field != "" {
		where += "." + field
	}
	if value != "" {
		where += " " + quoteCut(value)
	}
	return &BlockError{Index: i, Field: field, Err: err, msg: where + fmt.Sprintf(format, args...)}
}

// maxQuoted bounds a value quoted in a message, so a pasted paragraph in a
// "path" does not flood the log.
const maxQuoted = 120

func quoteCut(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
