package content

import (
	"fmt"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	pngB := pngBytes(t)
	writeFile(t, dir, "x.png", pngB)
	writeFile(t, dir, "main.go", []byte(strings.Repeat("x", 2048)))
	many := make([]Block, 10)
	for i := range many {
		many[i] = Block{Type: "text", Text: "hi"}
	}
	tests := []struct {
		name   string
		prompt string
		blocks []Block
		want   string
	}{
		{"nothing", " ", nil, "no content"},
		{"prompt only", "hello", nil, "prompt text"},
		{"image path and file", "hello", []Block{{Type: "image", Path: "x.png"}, {Type: "file", Path: "main.go"}},
			fmt.Sprintf("prompt text + [image x.png, %d B] + [file main.go, 2.0 KiB]", len(pngB))},
		{"image data", "", []Block{{Type: "image", MediaType: "image/png", Data: b64(make([]byte, 34900))}, {Type: "image", Data: "AAAA"}},
			"[image image/png, 34.1 KiB] + [image, 3 B]"},
		{"missing path has no size", "", []Block{{Type: "file", Path: "gone.txt"}}, "[file gone.txt]"},
		{"text and unknown", "", []Block{{Type: "text", Text: "abc"}, {Type: "video"}, {Type: "image"}}, `[text, 3 B] + [unknown type "video"] + [image]`},
		{"odd path quoted", "", []Block{{Type: "file", Path: "a b]\n+ [x"}}, `[file "a b]\n+ [x"]`},
		{"many blocks cut", "p", many, "prompt text" + strings.Repeat(" + [text, 2 B]", maxSummaryBlocks) + " + 2 more blocks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summary(tt.prompt, tt.blocks, dir); got != tt.want {
				t.Errorf("Summary = %q, want %q", got, tt.want)
			}
		})
	}
}
