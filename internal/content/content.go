package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Block types of the protocol's content list.
const (
	TypeText  = "text"
	TypeImage = "image"
	TypeFile  = "file"
)

// Block is one entry of a prompt's "content" list, in the protocol's shape.
// Which fields a block may set depends on its Type: text takes Text; image
// takes Data or Path, and optionally MediaType; file takes Path.
type Block struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	Path      string `json:"path,omitempty"`
}

// Default limits: DefaultMaxImageBytes is the Messages API's own limit per
// image; a bigger image would only fail later, inside the run.
const (
	DefaultMaxImageBytes = 5 << 20
	DefaultMaxFileBytes  = 1 << 20
	DefaultMaxTotalBytes = 20 << 20
)

// Limits bound the content of one prompt. Zero (or negative) fields mean
// the defaults. Images count with their decoded size, files and text with
// their length in bytes; the total counts the prompt text and every block.
type Limits struct {
	MaxImageBytes int64
	MaxFileBytes  int64
	MaxTotalBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxImageBytes <= 0 {
		l.MaxImageBytes = DefaultMaxImageBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	return l
}

// apiBlock is one block of the Messages API content array.
type apiBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Message is a prompt as the CLI gets it and as the relay records it.
type Message struct {
	// Content is the Messages-API content array (see Build).
	Content json.RawMessage
	// Record is what relay.run_started or relay.message_sent says of it:
	// the prompt text and the text blocks joined (wire.JoinPrompt), never a
	// file's contents; every block described (type, path, media type, size,
	// and the SHA-256 of an image's or a file's bytes, as sent); bounded and
	// marked by wire.RecordPrompt.
	Record wire.PromptRecord
}

// Build turns an optional prompt text and blocks into the Messages-API
// content array the CLI takes in a stream-json user message:
// [{"type":"text","text":…},{"type":"image","source":{"type":"base64","media_type":…,"data":…}}, …].
// The prompt text, when not blank, comes first, then the blocks in order.
// Paths are relative to cwd. Errors are *BlockError naming the block, such
// as `content[2].path "x.png": no such file`, and wrap one of the Err
// sentinels (or the file system's error).
func Build(prompt string, blocks []Block, cwd string, lim Limits) (json.RawMessage, error) {
	m, err := Prepare(prompt, blocks, cwd, lim)
	return m.Content, err
}

// Prepare is Build and the record of the same prompt, made from the bytes
// that are sent: a file or an image is read once.
func Prepare(prompt string, blocks []Block, cwd string, lim Limits) (Message, error) {
	b := &builder{cwd: cwd, lim: lim.withDefaults()}
	hasPrompt := strings.TrimSpace(prompt) != ""
	if !hasPrompt && len(blocks) == 0 {
		return Message{}, &BlockError{Index: promptIndex, Err: ErrNoContent,
			msg: "no prompt: the prompt text is empty and there are no content blocks; give one or both"}
	}
	if hasPrompt {
		if err := b.count(promptIndex, int64(len(prompt))); err != nil {
			return Message{}, err
		}
		b.out = append(b.out, apiBlock{Type: TypeText, Text: prompt})
		b.texts = append(b.texts, prompt)
	}
	for i, blk := range blocks {
		if err := b.add(i, blk); err != nil {
			return Message{}, err
		}
	}
	out, err := encode(b.out)
	if err != nil {
		return Message{}, err
	}
	return Message{Content: out, Record: wire.RecordPrompt(wire.JoinPrompt(b.texts...), b.rec)}, nil
}

// builder collects the output blocks, the running total and the record.
type builder struct {
	cwd   string
	lim   Limits
	total int64
	out   []apiBlock
	texts []string           // the prompt's texts, for the record
	rec   []wire.PromptBlock // one per block
}

// add checks block i and appends what it becomes.
func (b *builder) add(i int, blk Block) error {
	switch blk.Type {
	case TypeText:
		return b.text(i, blk)
	case TypeImage:
		return b.image(i, blk)
	case TypeFile:
		return b.file(i, blk)
	case "":
		return blockErr(i, "", "", ErrInvalidBlock, `: has no "type"; use one of %s, %s or %s`, TypeText, TypeImage, TypeFile)
	default:
		return blockErr(i, "type", blk.Type, ErrInvalidBlock, ": unknown block type; use one of %s, %s or %s", TypeText, TypeImage, TypeFile)
	}
}

func (b *builder) text(i int, blk Block) error {
	if err := onlyFields(i, blk, "text"); err != nil {
		return err
	}
	if strings.TrimSpace(blk.Text) == "" {
		return blockErr(i, "text", "", ErrInvalidBlock, " is empty; give the text or drop the block")
	}
	if err := b.count(i, int64(len(blk.Text))); err != nil {
		return err
	}
	b.out = append(b.out, apiBlock{Type: TypeText, Text: blk.Text})
	b.texts = append(b.texts, blk.Text)
	b.rec = append(b.rec, wire.PromptBlock{Type: wire.BlockText, Size: int64(len(blk.Text))})
	return nil
}

// count adds n bytes to the running total and refuses to pass the total
// limit.
func (b *builder) count(i int, n int64) error {
	if b.total+n > b.lim.MaxTotalBytes {
		what := "this block brings the content"
		if i == promptIndex {
			what = "the text comes"
		}
		return blockErr(i, "", "", ErrTooLarge, ": %s to %s, over the %s total limit; send fewer or smaller blocks",
			what, wire.HumanSize(b.total+n), limitSize(b.lim.MaxTotalBytes))
	}
	b.total += n
	return nil
}

// onlyFields refuses fields the block's type does not take, so that a
// mistake such as {"type":"text","path":"x"} is not silently dropped.
func onlyFields(i int, blk Block, allowed ...string) error {
	set := []struct {
		name string
		on   bool
	}{
		{"text", blk.Text != ""},
		{"media_type", blk.MediaType != ""},
		{"data", blk.Data != ""},
		{"path", blk.Path != ""},
	}
	for _, f := range set {
		if f.on && !slices.Contains(allowed, f.name) {
			return blockErr(i, "", "", ErrInvalidBlock, ": %s %s block does not take %q (it takes %s); remove it",
				article(blk.Type), blk.Type, f.name, quoteList(allowed))
		}
	}
	return nil
}

func article(blockType string) string {
	if blockType == TypeImage {
		return "an"
	}
	return "a"
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// encode writes the blocks without HTML escaping, so the CLI (and anyone
// reading a log of its stdin) sees "<" rather than "\u003c".
func encode(blocks []apiBlock) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(blocks); err != nil {
		return nil, fmt.Errorf("encode content blocks: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
