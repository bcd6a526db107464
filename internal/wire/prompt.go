package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of what relay.run_started and relay.message_sent record of a
// prompt (docs/events.md). The CLI always gets the whole prompt; only the
// record is bounded, and a cut is always marked.
const (
	// MaxPromptBytes bounds PromptRecord.Prompt: UTF-8, cut on a rune
	// boundary, PromptTruncated set.
	MaxPromptBytes = 256 << 10
	// MaxPromptBlocks bounds PromptRecord.Blocks: the first ones are kept,
	// BlocksTruncated set and BlocksTotal the number of blocks there were.
	MaxPromptBlocks = 256
	// MaxBlockField bounds a PromptBlock's name, path and media type
	// (bytes; a cut one ends in "…").
	MaxBlockField = 1 << 10
)

// Types of a PromptBlock: the protocol's content blocks (text, image,
// file) and ACP's (text, image, resource_link, resource).
const (
	BlockText         = "text"
	BlockImage        = "image"
	BlockFile         = "file"
	BlockResourceLink = "resource_link" // a reference the CLI resolves itself; not read by the relay
	BlockResource     = "resource"      // an embedded resource: its contents came with the prompt
)

// PromptBlock describes one content block of a prompt without its
// contents: what it is, what it is called, how big it is, and for the ones
// whose bytes the relay had in hand (images, files, embedded resources) a
// digest of those bytes, so the record can be checked against a copy.
type PromptBlock struct {
	Type      string `json:"type"`
	Name      string `json:"name,omitempty"`       // what the client called it (an ACP resource link's name)
	Path      string `json:"path,omitempty"`       // a file's path as given, or a resource's URI
	MediaType string `json:"media_type,omitempty"` // an image's sniffed type, text/plain for a file block, a resource's mimeType
	Size      int64  `json:"size"`                 // bytes: a text's UTF-8 length, an image's decoded size, a file's or resource's length; 0 for a link of unknown size
	SHA256    string `json:"sha256,omitempty"`     // hex digest of those bytes (images, files, embedded resources)
}

// PromptRecord is what the relay records of a prompt. Prompt is the
// prompt's text in full up to MaxPromptBytes: the prompt text and every
// text block, in order (see JoinPrompt), with the @mentions the CLI
// resolves; never the contents of files or embedded resources, which
// Blocks describes. RecordPrompt makes one.
type PromptRecord struct {
	Prompt string `json:"prompt,omitempty"`
	// PromptBytes is the size of the text as given, before invalid UTF-8
	// and NUL were replaced and before any cut; set whenever Prompt is.
	PromptBytes     int  `json:"prompt_bytes,omitempty"`
	PromptTruncated bool `json:"prompt_truncated,omitempty"` // Prompt is the first MaxPromptBytes of it
	// Blocks describes the prompt's content blocks in order, the first
	// MaxPromptBlocks of them; absent for a prompt given as text alone.
	Blocks          []PromptBlock `json:"blocks,omitempty"`
	BlocksTotal     int           `json:"blocks_total,omitempty"`     // set with BlocksTruncated: how many there were
	BlocksTruncated bool          `json:"blocks_truncated,omitempty"` // Blocks lists only the first MaxPromptBlocks
}

// RecordPrompt bounds a prompt for the record: text made valid (invalid
// UTF-8 and NUL become U+FFFD, so nothing is dropped silently and every
// store can keep it) and cut to MaxPromptBytes on a rune boundary; blocks
// cut to MaxPromptBlocks, their fields to MaxBlockField. Every cut is
// marked. A blank text records no prompt.
func RecordPrompt(text string, blocks []PromptBlock) PromptRecord {
	var rec PromptRecord
	if strings.TrimSpace(text) != "" {
		rec.PromptBytes = len(text)
		rec.Prompt = ValidText(text)
		if len(rec.Prompt) > MaxPromptBytes {
			rec.Prompt, rec.PromptTruncated = cutUTF8(rec.Prompt, MaxPromptBytes), true
		}
	}
	if len(blocks) > MaxPromptBlocks {
		rec.BlocksTotal, rec.BlocksTruncated = len(blocks), true
		blocks = blocks[:MaxPromptBlocks]
	}
	for _, b := range blocks {
		b.Type, b.Name, b.Path, b.MediaType = field(b.Type), field(b.Name), field(b.Path), field(b.MediaType)
		rec.Blocks = append(rec.Blocks, b)
	}
	return rec
}

// Empty reports whether the record names no prompt: an idle start.
func (p PromptRecord) Empty() bool { return p.Prompt == "" && len(p.Blocks) == 0 }

// JoinPrompt joins a prompt's texts in order: blank ones are left out, and
// two texts are set apart by a blank line unless white space already
// separates them (an ACP client splits "look at @x please" into three
// blocks around the mention; they join back as written).
func JoinPrompt(texts ...string) string {
	var b strings.Builder
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		if b.Len() > 0 {
			prev, _ := utf8.DecodeLastRuneInString(b.String())
			next, _ := utf8.DecodeRuneInString(t)
			if !unicode.IsSpace(prev) && !unicode.IsSpace(next) {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(t)
	}
	return b.String()
}

// SHA256 is the hex SHA-256 of b, as PromptBlock.SHA256 holds it.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ValidText replaces each byte of invalid UTF-8, and each NUL, with U+FFFD
// (as encoding/json does for the first): text that any JSON encoder and any
// store (PostgreSQL's text refuses NUL) keeps as it is, with every
// replaced byte still counted.
func ValidText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r == 0:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+size])
		}
		i += max(size, 1)
	}
	return b.String()
}

// field is a block's string field made valid and bounded.
func field(s string) string {
	s = ValidText(s)
	if len(s) <= MaxBlockField {
		return s
	}
	return cutUTF8(s, MaxBlockField-len("…")) + "…"
}

// cutUTF8 returns the longest prefix of valid UTF-8 s of at most n bytes
// that ends on a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// HumanSize is a size for people, in the binary units the relay's limits
// use: "812 B", "33.3 KiB", "5.0 MiB", "1.2 GiB".
func HumanSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
