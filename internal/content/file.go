package content

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// kind is what a path is read as, for limits and messages.
type kind string

const (
	kindImage kind = "image"
	kindFile  kind = "file"
)

func (b *builder) limit(k kind) int64 {
	if k == kindImage {
		return b.lim.MaxImageBytes
	}
	return b.lim.MaxFileBytes
}

// tooBig says a block is over its limit; path names its file, when it has one.
func tooBig(i int, k kind, path string, n, limit int64) error {
	hint := "resize or compress it"
	if k == kindFile {
		hint = "send a smaller file or only the part that matters"
	}
	if path != "" {
		return blockErr(i, "path", path, ErrTooLarge, ": the %s is %s, over the %s limit; %s", k, wire.HumanSize(n), limitSize(limit), hint)
	}
	return blockErr(i, "", "", ErrTooLarge, ": %s is %s, over the %s limit; %s", k, wire.HumanSize(n), limitSize(limit), hint)
}

// resolve makes p absolute against the run's working directory.
func (b *builder) resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.cwd, p)
}

// readPath reads the regular file at p (relative to cwd) within the limit
// for k. It stats first so an oversized file is refused unread, and refuses
// anything but a regular file: opening a FIFO would block, and a device
// has no size to check.
func (b *builder) readPath(i int, p string, k kind) ([]byte, error) {
	full := b.resolve(p)
	fi, err := os.Stat(full)
	if err != nil {
		return nil, pathErr(i, p, full, err)
	}
	switch {
	case fi.IsDir():
		return nil, blockErr(i, "path", p, ErrNotFile, ": is a directory; name a file")
	case !fi.Mode().IsRegular():
		return nil, blockErr(i, "path", p, ErrNotFile, ": not a regular file (%s); name a file", fi.Mode().Type())
	}
	limit := b.limit(k)
	if fi.Size() > limit {
		return nil, tooBig(i, k, p, fi.Size(), limit)
	}
	if err := b.count(i, fi.Size()); err != nil {
		return nil, err
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, pathErr(i, p, full, err)
	}
	defer f.Close()
	// The file may have grown since the stat: read one byte past the
	// limit to notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, blockErr(i, "path", p, err, ": read: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, tooBig(i, k, p, int64(len(data)), limit)
	}
	// Keep the total honest if the file changed size since the stat.
	b.total += int64(len(data)) - fi.Size()
	return data, nil
}

// pathErr words a failed stat or open; it wraps the file system's error.
func pathErr(i int, p, full string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if full != p {
			return blockErr(i, "path", p, err, ": no such file (looked for %s; paths are relative to the run's working directory)", full)
		}
		return blockErr(i, "path", p, err, ": no such file")
	case errors.Is(err, fs.ErrPermission):
		return blockErr(i, "path", p, err, ": permission denied; make the file readable by the relay's user")
	default:
		return blockErr(i, "path", p, err, ": %v", err)
	}
}

// MediaText is the media type a file block is recorded with: Build takes
// only UTF-8 text without NUL bytes.
const MediaText = "text/plain"

func (b *builder) file(i int, blk Block) error {
	if err := onlyFields(i, blk, "path"); err != nil {
		return err
	}
	if blk.Path == "" {
		return blockErr(i, "", "", ErrInvalidBlock, `: a file block needs "path"; give one`)
	}
	data, err := b.readPath(i, blk.Path, kindFile)
	if err != nil {
		return err
	}
	if at := bytes.IndexByte(data, 0); at >= 0 {
		return blockErr(i, "path", blk.Path, ErrNotText, ": not a text file (NUL byte at offset %d); send images as image blocks, other binary files are not supported", at)
	}
	if !utf8.Valid(data) {
		return blockErr(i, "path", blk.Path, ErrNotText, ": not a text file (invalid UTF-8 at offset %d); convert it to UTF-8", invalidAt(data))
	}
	b.out = append(b.out, apiBlock{Type: TypeText, Text: inline(blk.Path, string(data))})
	b.rec = append(b.rec, wire.PromptBlock{Type: wire.BlockFile, Path: blk.Path, MediaType: MediaText,
		Size: int64(len(data)), SHA256: wire.SHA256(data)})
	return nil
}

func invalidAt(b []byte) int {
	for off := 0; off < len(b); {
		r, size := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && size <= 1 {
			return off
		}
		off += size
	}
	return -1
}

// inline is a file as the model sees it: its path, a colon, and its text in
// a code fence one backtick longer than any backtick run inside.
func inline(path, text string) string {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	var sb strings.Builder
	sb.Grow(len(path) + len(text) + 2*len(fence) + 4)
	sb.WriteString(path)
	sb.WriteString(":\n")
	sb.WriteString(fence)
	sb.WriteString("\n")
	sb.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		sb.WriteString("\n")
	}
	sb.WriteString(fence)
	return sb.String()
}

func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// limitSize is a configured limit as it was most likely written: "5 MiB",
// "64 KiB", or bytes.
func limitSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
