package content

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// FuzzBuild feeds Build block lists as they arrive in a command's JSON. It
// checks that Build never panics, that a refusal is a *BlockError naming a
// block that exists, and that a success is deterministic and well formed:
// one API block per input block (plus the prompt), images that decode to
// the media type they claim.
func FuzzBuild(f *testing.F) {
	dir := f.TempDir()
	png := pngBytes(f)
	writeFile(f, dir, "shot.png", png)
	writeFile(f, dir, "notes.md", []byte("# Notes\n```go\nx := 1\n```\n"))
	writeFile(f, dir, "bin.dat", []byte{0, 1, 2})
	seeds := []struct {
		prompt string
		blocks string
	}{
		{"hi", `[]`},
		{"", `[{"type":"text","text":"hello"}]`},
		{"look", `[{"type":"image","path":"shot.png"},{"type":"file","path":"notes.md"}]`},
		{"", `[{"type":"image","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(png) + `"}]`},
		{"", `[{"type":"image","data":"R0lGODlhAQABAAAAACw="}]`},
		{"", `[{"type":"image","media_type":"image/gif","data":"/9j/4AAQ"}]`},
		{"", `[{"type":"image","data":"UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA"}]`},
		{"", `[{"type":"file","path":"bin.dat"},{"type":"video"}]`},
		{"x", `[{"type":"image","data":"data:image/png;base64,AAAA"},{"type":"text"}]`},
		{"", `[{"type":"file","path":"missing.txt","text":"t"}]`},
	}
	for _, s := range seeds {
		f.Add(s.prompt, []byte(s.blocks))
	}
	lim := Limits{MaxImageBytes: 1 << 16, MaxFileBytes: 1 << 16, MaxTotalBytes: 1 << 17}
	f.Fuzz(func(t *testing.T, prompt string, blocksJSON []byte) {
		var blocks []Block
		if err := json.Unmarshal(blocksJSON, &blocks); err != nil {
			return
		}
		for _, b := range blocks {
			// Stay inside the fixture directory: the fuzzer must not read
			// whatever the machine holds.
			if filepath.IsAbs(b.Path) || strings.Contains(b.Path, "..") {
				return
			}
		}
		if s := Summary(prompt, blocks, dir); strings.ContainsAny(s, "\n\r") {
			t.Errorf("Summary %q spans lines", s)
		}
		out, err := Build(prompt, blocks, dir, lim)
		if err != nil {
			checkRefusal(t, err, len(blocks))
			return
		}
		again, err := Build(prompt, blocks, dir, lim)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("Build is not deterministic: %s then %s (%v)", out, again, err)
		}
		want := len(blocks)
		if strings.TrimSpace(prompt) != "" {
			want++
		}
		checkOutput(t, out, want)
		m, err := Prepare(prompt, blocks, dir, lim)
		if err != nil || !bytes.Equal(m.Content, out) {
			t.Fatalf("Prepare differs from Build: %v", err)
		}
		checkRecord(t, m.Record, len(blocks))
	})
}

// checkRecord: the record is valid UTF-8 within the caps and describes
// every block.
func checkRecord(t *testing.T, r wire.PromptRecord, blocks int) {
	t.Helper()
	if !utf8.ValidString(r.Prompt) || strings.ContainsRune(r.Prompt, 0) || len(r.Prompt) > wire.MaxPromptBytes {
		t.Errorf("record text of %d bytes is not bounded, valid UTF-8 without NUL", len(r.Prompt))
	}
	if len(r.Blocks) != min(blocks, wire.MaxPromptBlocks) || r.BlocksTruncated != (blocks > wire.MaxPromptBlocks) {
		t.Errorf("record describes %d of %d blocks (truncated %v)", len(r.Blocks), blocks, r.BlocksTruncated)
	}
}

func checkRefusal(t *testing.T, err error, blocks int) {
	t.Helper()
	var be *BlockError
	if !errors.As(err, &be) {
		t.Fatalf("error %T (%v) is not a *BlockError", err, err)
	}
	if be.Index < -1 || be.Index >= blocks || be.Err == nil || err.Error() == "" {
		t.Fatalf("BlockError %+v (%q) for %d blocks", be, err, blocks)
	}
}

func checkOutput(t *testing.T, out []byte, want int) {
	t.Helper()
	var got []struct {
		Type   string  `json:"type"`
		Text   *string `json:"text"`
		Source *struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s is not a JSON array of blocks: %v", out, err)
	}
	if len(got) != want {
		t.Fatalf("output has %d blocks, want %d: %s", len(got), want, out)
	}
	for i, b := range got {
		switch b.Type {
		case TypeText:
			if b.Text == nil || strings.TrimSpace(*b.Text) == "" || b.Source != nil {
				t.Errorf("block %d: bad text block in %s", i, out)
			}
		case TypeImage:
			if b.Source == nil || b.Source.Type != "base64" || b.Text != nil {
				t.Fatalf("block %d: bad image block in %s", i, out)
			}
			img, err := base64.StdEncoding.DecodeString(b.Source.Data)
			if err != nil || sniff(img) != b.Source.MediaType {
				t.Errorf("block %d: data does not decode to a %s (%v)", i, b.Source.MediaType, err)
			}
		default:
			t.Errorf("block %d: type %q in %s", i, b.Type, out)
		}
	}
}
