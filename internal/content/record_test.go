package content

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Prepare records what it sends: the texts joined, never a file's contents,
// and every block described with the digest of the bytes that went out.
func TestPrepareRecord(t *testing.T) {
	dir := t.TempDir()
	pngB, jpegB := pngBytes(t), jpegBytes(t)
	writeFile(t, dir, "shots/a.png", pngB)
	writeFile(t, dir, "notes.txt", []byte("secret notes\n"))
	m, err := Prepare("look", []Block{
		{Type: "text", Text: "at these"},
		{Type: "image", Path: "shots/a.png"},
		{Type: "image", Data: b64(jpegB)},
		{Type: "file", Path: "notes.txt"},
		{Type: "text", Text: "thanks"},
	}, dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := wire.PromptRecord{Prompt: "look\n\nat these\n\nthanks", PromptBytes: len("look\n\nat these\n\nthanks"), Blocks: []wire.PromptBlock{
		{Type: "text", Size: 8},
		{Type: "image", Path: "shots/a.png", MediaType: MediaPNG, Size: int64(len(pngB)), SHA256: wire.SHA256(pngB)},
		{Type: "image", MediaType: MediaJPEG, Size: int64(len(jpegB)), SHA256: wire.SHA256(jpegB)},
		{Type: "file", Path: "notes.txt", MediaType: MediaText, Size: 13, SHA256: wire.SHA256([]byte("secret notes\n"))},
		{Type: "text", Size: 6},
	}}
	if got, w := mustJSON(t, m.Record), mustJSON(t, want); got != w {
		t.Errorf("record\n got %s\nwant %s", got, w)
	}
	if strings.Contains(m.Record.Prompt, "secret") {
		t.Error("the record's text holds a file's contents")
	}
	if !bytes.Contains(m.Content, []byte("secret notes")) {
		t.Error("the CLI's content lacks the file")
	}
	built, err := Build("look", []Block{{Type: "text", Text: "at these"}}, dir, Limits{})
	if err != nil || !bytes.Equal(built, mustPrepare(t, "look", []Block{{Type: "text", Text: "at these"}}, dir).Content) {
		t.Errorf("Build and Prepare differ: %s, %v", built, err)
	}
}

// A prompt over the record's cap, or holding junk, goes to the CLI whole
// and as given; the record is cut, replaced and marked.
func TestPrepareRecordBounds(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("y", 10<<20)
	m := mustPrepare(t, big, nil, dir)
	if !m.Record.PromptTruncated || len(m.Record.Prompt) != wire.MaxPromptBytes || m.Record.PromptBytes != len(big) {
		t.Errorf("10 MiB prompt recorded as %d bytes, truncated %v, prompt_bytes %d", len(m.Record.Prompt), m.Record.PromptTruncated, m.Record.PromptBytes)
	}
	var sent []struct{ Text string }
	if err := json.Unmarshal(m.Content, &sent); err != nil || len(sent) != 1 || sent[0].Text != big {
		t.Errorf("the CLI did not get the whole 10 MiB prompt (%v)", err)
	}
	junk := mustPrepare(t, "", []Block{{Type: "text", Text: "bin\x00ary\xc3"}}, dir)
	if junk.Record.Prompt != "bin\uFFFDary\uFFFD" || junk.Record.Blocks[0].Size != 8 {
		t.Errorf("junk recorded as %q (size %d), want the bad bytes replaced and the size as given", junk.Record.Prompt, junk.Record.Blocks[0].Size)
	}
	many := make([]Block, 300)
	for i := range many {
		many[i] = Block{Type: "image", Data: b64(pngBytes(t))}
	}
	if r := mustPrepare(t, "", many, dir).Record; len(r.Blocks) != wire.MaxPromptBlocks || !r.BlocksTruncated || r.BlocksTotal != 300 {
		t.Errorf("300 images: %d described, truncated %v, total %d", len(r.Blocks), r.BlocksTruncated, r.BlocksTotal)
	}
}

func mustPrepare(t *testing.T, prompt string, blocks []Block, dir string) Message {
	t.Helper()
	m, err := Prepare(prompt, blocks, dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
