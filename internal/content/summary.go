package content

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// maxSummaryBlocks bounds the blocks Summary lists, so a prompt with
// hundreds of blocks still logs one short line.
const maxSummaryBlocks = 8

// Summary returns a one-line plain-text account of a prompt's content, for
// logs (relay.run_started records the prompt itself: Prepare's Record; a
// helper before event schema 2 wrote this there): "prompt text + [image x.png, 34.1 kB] +
// [file main.go, 2.0 kB]". It reads no file (sizes of path blocks come from
// a stat against cwd; a path that cannot be stat'ed is shown without one)
// and validates nothing, so it also describes content Build refused.
func Summary(prompt string, blocks []Block, cwd string) string {
	var parts []string
	if strings.TrimSpace(prompt) != "" {
		parts = append(parts, "prompt text")
	}
	for i, blk := range blocks {
		if i == maxSummaryBlocks {
			parts = append(parts, fmt.Sprintf("%d more blocks", len(blocks)-i))
			break
		}
		parts = append(parts, "["+describe(blk, cwd)+"]")
	}
	if len(parts) == 0 {
		return "no content"
	}
	return strings.Join(parts, " + ")
}

// describe is one block of a Summary: "text, 12 B", "image image/png,
// 34.1 kB", "image x.png, 34.1 kB", "file main.go, 2.0 kB".
func describe(blk Block, cwd string) string {
	switch blk.Type {
	case TypeText:
		return "text, " + wire.HumanSize(int64(len(blk.Text)))
	case TypeImage, TypeFile:
		if blk.Path != "" {
			return blk.Type + " " + showPath(blk.Path) + statSize(blk.Path, cwd)
		}
		if blk.Type == TypeImage && blk.Data != "" {
			name := "image"
			if blk.MediaType != "" {
				name += " " + showPath(blk.MediaType)
			}
			return name + ", " + wire.HumanSize(decodedLen(blk.Data))
		}
		return blk.Type
	default:
		return "unknown type " + quoteCut(blk.Type)
	}
}

// statSize is ", <size>" for a regular file at p, else "".
func statSize(p, cwd string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return ", " + wire.HumanSize(fi.Size())
}

// showPath keeps a plain value as it is and quotes one that holds spaces,
// control characters or the summary's own punctuation, so a path cannot
// forge a log line or a block.
func showPath(p string) string {
	if len(p) <= maxQuoted && strconv.Quote(p) == `"`+p+`"` && !strings.ContainsAny(p, " []+,") {
		return p
	}
	return quoteCut(p)
}
