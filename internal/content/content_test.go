package content

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyImage is a 2x2 picture for the encoders.
func tinyImage() *image.Paletted {
	img := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.White, color.RGBA{R: 255, A: 255}})
	img.SetColorIndex(1, 1, 1)
	return img
}

func encodeWith(t testing.TB, enc func(*bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := enc(&buf); err != nil {
		t.Fatalf("encode test image: %v", err)
	}
	return buf.Bytes()
}

func pngBytes(t testing.TB) []byte {
	return encodeWith(t, func(b *bytes.Buffer) error { return png.Encode(b, tinyImage()) })
}

func jpegBytes(t testing.TB) []byte {
	return encodeWith(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, tinyImage(), nil) })
}

func gifBytes(t testing.TB) []byte {
	return encodeWith(t, func(b *bytes.Buffer) error { return gif.Encode(b, tinyImage(), nil) })
}

// webpBytes is a 1x1 lossless WebP (the standard library has no encoder).
func webpBytes(t testing.TB) []byte {
	b, err := base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	if err != nil {
		t.Fatalf("decode WebP fixture: %v", err)
	}
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func imageJSON(media string, b []byte) string {
	return fmt.Sprintf(`{"type":"image","source":{"type":"base64","media_type":%q,"data":%q}}`, media, b64(b))
}

func textJSON(s string) string {
	return fmt.Sprintf(`{"type":"text","text":%q}`, s)
}

// wrap76 breaks s into MIME-style 76-column lines.
func wrap76(s string) string {
	var sb strings.Builder
	for len(s) > 76 {
		sb.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	sb.WriteString(s)
	return sb.String()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sparse makes a file of the given size without writing its bytes, and
// takes away its read permission: a Build that reads it before checking
// the size fails differently (except as root, which reads anyway).
func sparse(t testing.TB, dir, name string, size int64) {
	t.Helper()
	p := writeFile(t, dir, name, nil)
	if err := os.Truncate(p, size); err != nil {
		t.Fatalf("make sparse file: %v", err)
	}
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	pngB, jpegB, gifB, webpB := pngBytes(t), jpegBytes(t), gifBytes(t), webpBytes(t)
	writeFile(t, dir, "shot.png", pngB)
	writeFile(t, dir, "sub/photo.jpg", jpegB)
	writeFile(t, dir, "notes.txt", []byte("first line\nsecond line\n"))
	writeFile(t, dir, "no-newline.txt", []byte("tail"))
	writeFile(t, dir, "empty.txt", nil)
	writeFile(t, dir, "README.md", []byte("Run:\n```sh\nmake\n```\n"))
	abs := filepath.Join(dir, "shot.png")

	tests := []struct {
		name   string
		prompt string
		blocks []Block
		want   string
	}{
		{"prompt only", "hi", nil, `[` + textJSON("hi") + `]`},
		{"prompt then blocks, no HTML escaping", "look <here>", []Block{{Type: "text", Text: "a & b"}},
			`[{"type":"text","text":"look <here>"},{"type":"text","text":"a & b"}]`},
		{"blank prompt dropped", "  \n", []Block{{Type: "text", Text: "x"}}, `[` + textJSON("x") + `]`},
		{"PNG data, type sniffed", "", []Block{{Type: "image", Data: b64(pngB)}}, `[` + imageJSON("image/png", pngB) + `]`},
		{"unpadded data, output padded", "", []Block{{Type: "image", MediaType: "image/png", Data: base64.RawStdEncoding.EncodeToString(pngB)}},
			`[` + imageJSON("image/png", pngB) + `]`},
		{"line-wrapped data", "", []Block{{Type: "image", Data: wrap76(b64(pngB))}}, `[` + imageJSON("image/png", pngB) + `]`},
		{"media type case-insensitive", "", []Block{{Type: "image", MediaType: "Image/JPEG", Data: b64(jpegB)}},
			`[` + imageJSON("image/jpeg", jpegB) + `]`},
		{"GIF data", "", []Block{{Type: "image", Data: b64(gifB)}}, `[` + imageJSON("image/gif", gifB) + `]`},
		{"WebP data", "", []Block{{Type: "image", MediaType: "image/webp", Data: b64(webpB)}}, `[` + imageJSON("image/webp", webpB) + `]`},
		{"image path relative to cwd", "what is this?", []Block{{Type: "image", Path: "sub/photo.jpg"}},
			`[` + textJSON("what is this?") + `,` + imageJSON("image/jpeg", jpegB) + `]`},
		{"image path absolute with media type", "", []Block{{Type: "image", Path: abs, MediaType: "image/png"}},
			`[` + imageJSON("image/png", pngB) + `]`},
		{"file inlined with its path", "", []Block{{Type: "file", Path: "notes.txt"}},
			`[` + textJSON("notes.txt:\n```\nfirst line\nsecond line\n```") + `]`},
		{"file without final newline", "", []Block{{Type: "file", Path: "no-newline.txt"}},
			`[` + textJSON("no-newline.txt:\n```\ntail\n```") + `]`},
		{"empty file", "", []Block{{Type: "file", Path: "empty.txt"}}, `[` + textJSON("empty.txt:\n```\n```") + `]`},
		{"fence longer than the file's", "", []Block{{Type: "file", Path: "README.md"}},
			`[` + textJSON("README.md:\n````\nRun:\n```sh\nmake\n```\n````") + `]`},
		{"everything in order", "p", []Block{
			{Type: "file", Path: "notes.txt"}, {Type: "image", Path: "shot.png"}, {Type: "text", Text: "t"},
		}, `[` + textJSON("p") + `,` + textJSON("notes.txt:\n```\nfirst line\nsecond line\n```") + `,` +
			imageJSON("image/png", pngB) + `,` + textJSON("t") + `]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Build(tt.prompt, tt.blocks, dir, Limits{})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Build =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	pngB, jpegB := pngBytes(t), jpegBytes(t)
	writeFile(t, dir, "shot.png", pngB)
	writeFile(t, dir, "fake.png", []byte("hello world, not a picture"))
	writeFile(t, dir, "bin.dat", []byte("abc\x00def"))
	writeFile(t, dir, "latin1.txt", []byte("caf\xe9\n"))
	writeFile(t, dir, "notes.txt", []byte("0123456789"))
	sparse(t, dir, "huge.png", 50<<20)
	sparse(t, dir, "big.txt", 2<<20)
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	// 6 MiB of zero bytes: it is refused for its size before anyone
	// decodes it and finds it is not an image.
	tooBigData := b64(make([]byte, 6<<20))
	missing := filepath.Join(dir, "x.png")

	tests := []struct {
		name    string
		prompt  string
		blocks  []Block
		lim     Limits
		want    string
		sent    error
		index   int
		field   string
		fsError error
	}{
		{name: "nothing", want: "no prompt: the prompt text is empty and there are no content blocks; give one or both",
			sent: ErrNoContent, index: -1},
		{name: "blank prompt, no blocks", prompt: " \t\n", want: "no prompt: the prompt text is empty and there are no content blocks; give one or both",
			sent: ErrNoContent, index: -1},
		{name: "empty blocks list", blocks: []Block{}, sent: ErrNoContent, index: -1,
			want: "no prompt: the prompt text is empty and there are no content blocks; give one or both"},
		{name: "empty text", prompt: "p", blocks: []Block{{Type: "text"}}, sent: ErrInvalidBlock, field: "text",
			want: "content[0].text is empty; give the text or drop the block"},
		{name: "blank text", blocks: []Block{{Type: "text", Text: "a"}, {Type: "text", Text: " \n"}}, sent: ErrInvalidBlock, index: 1, field: "text",
			want: "content[1].text is empty; give the text or drop the block"},
		{name: "unknown type", blocks: []Block{{Type: "text", Text: "a"}, {Type: "video", Path: "a.mp4"}}, sent: ErrInvalidBlock, index: 1, field: "type",
			want: `content[1].type "video": unknown block type; use one of text, image or file`},
		{name: "no type", blocks: []Block{{Text: "a"}}, sent: ErrInvalidBlock,
			want: `content[0]: has no "type"; use one of text, image or file`},
		{name: "stray field on text", blocks: []Block{{Type: "text", Text: "a", Path: "x"}}, sent: ErrInvalidBlock,
			want: `content[0]: a text block does not take "path" (it takes "text"); remove it`},
		{name: "stray field on file", blocks: []Block{{Type: "file", Path: "notes.txt", MediaType: "text/plain"}}, sent: ErrInvalidBlock,
			want: `content[0]: a file block does not take "media_type" (it takes "path"); remove it`},
		{name: "stray field on image", blocks: []Block{{Type: "image", Path: "shot.png", Text: "caption"}}, sent: ErrInvalidBlock,
			want: `content[0]: an image block does not take "text" (it takes "data", "path", "media_type"); remove it`},
		{name: "file without path", blocks: []Block{{Type: "file"}}, sent: ErrInvalidBlock,
			want: `content[0]: a file block needs "path"; give one`},
		{name: "image without data or path", blocks: []Block{{Type: "image", MediaType: "image/png"}}, sent: ErrInvalidBlock,
			want: `content[0]: an image block needs "data" (base64) or "path"; give one`},
		{name: "image with data and path", blocks: []Block{{Type: "image", Data: b64(pngB), Path: "shot.png"}}, sent: ErrInvalidBlock,
			want: `content[0]: an image block takes "data" or "path", not both; remove one`},
		{name: "bad base64", blocks: []Block{{Type: "image", Data: "iVBOR!!!"}}, sent: ErrBadBase64, field: "data",
			want: "content[0].data is not valid base64 (illegal base64 data at input byte 5); send the image bytes in standard base64"},
		{name: "URL-safe base64", blocks: []Block{{Type: "image", Data: "__8-"}}, sent: ErrBadBase64, field: "data",
			want: "content[0].data is not valid base64 (illegal base64 data at input byte 0); send the image bytes in standard base64"},
		{name: "data URL", blocks: []Block{{Type: "image", Data: "data:image/png;base64," + b64(pngB)}}, sent: ErrBadBase64, field: "data",
			want: `content[0].data is a data URL; send only the base64 after "base64," and put the type in "media_type"`},
		{name: "data not an image", blocks: []Block{{Type: "image", Data: b64([]byte("hello world"))}}, sent: ErrNotImage, field: "data",
			want: `content[0].data is not a PNG, JPEG, GIF or WebP image (it starts with "hello wo"); send one of those formats`},
		{name: "path not an image", blocks: []Block{{Type: "text", Text: "t"}, {Type: "image", Path: "fake.png"}}, sent: ErrNotImage, index: 1, field: "path",
			want: `content[1].path "fake.png": is not a PNG, JPEG, GIF or WebP image (it starts with "hello wo"); send one of those formats`},
		{name: "unsupported media type", blocks: []Block{{Type: "image", MediaType: "image/bmp", Data: b64(pngB)}}, sent: ErrMediaType, field: "media_type",
			want: `content[0].media_type "image/bmp": not supported; use image/png, image/jpeg, image/gif or image/webp (or leave it out)`},
		{name: "media type contradicts data", blocks: []Block{{Type: "image", MediaType: "image/png", Data: b64(jpegB)}}, sent: ErrMediaType, field: "media_type",
			want: `content[0].media_type "image/png" but the data is a JPEG; set media_type to "image/jpeg" or leave it out`},
		{name: "media type contradicts file", blocks: []Block{{Type: "image", MediaType: "image/gif", Path: "shot.png"}}, sent: ErrMediaType, field: "media_type",
			want: `content[0].media_type "image/gif" but the file is a PNG; set media_type to "image/png" or leave it out`},
		{name: "image data over the limit", blocks: []Block{{Type: "image", Data: tooBigData}}, sent: ErrTooLarge,
			want: "content[0]: image is 6.0 MiB, over the 5 MiB limit; resize or compress it"},
		{name: "50 MB image path", prompt: "p", blocks: []Block{{Type: "image", Path: "huge.png"}}, sent: ErrTooLarge,
			field: "path", want: `content[0].path "huge.png": the image is 50.0 MiB, over the 5 MiB limit; resize or compress it`},
		{name: "image over a custom limit", blocks: []Block{{Type: "image", Path: "shot.png"}}, lim: Limits{MaxImageBytes: 10}, sent: ErrTooLarge,
			field: "path", want: fmt.Sprintf(`content[0].path "shot.png": the image is %d B, over the 10 bytes limit; resize or compress it`, len(pngB))},
		{name: "file over the limit", blocks: []Block{{Type: "file", Path: "big.txt"}}, sent: ErrTooLarge,
			field: "path", want: `content[0].path "big.txt": the file is 2.0 MiB, over the 1 MiB limit; send a smaller file or only the part that matters`},
		{name: "total over the limit", prompt: "0123456789", blocks: []Block{{Type: "text", Text: "0123456789"}, {Type: "file", Path: "notes.txt"}},
			lim: Limits{MaxTotalBytes: 25}, sent: ErrTooLarge, index: 1,
			want: "content[1]: this block brings the content to 30 B, over the 25 bytes total limit; send fewer or smaller blocks"},
		{name: "image data counts to the total", blocks: []Block{{Type: "image", Data: b64(pngB)}, {Type: "image", Path: "shot.png"}},
			lim: Limits{MaxTotalBytes: int64(len(pngB)) * 3 / 2}, sent: ErrTooLarge, index: 1,
			want: fmt.Sprintf("content[1]: this block brings the content to %d B, over the %d bytes total limit; send fewer or smaller blocks",
				2*len(pngB), len(pngB)*3/2)},
		{name: "prompt over the total", prompt: strings.Repeat("x", 2000), lim: Limits{MaxTotalBytes: 1 << 10}, sent: ErrTooLarge, index: -1,
			want: "prompt: the text comes to 2.0 KiB, over the 1 KiB total limit; send fewer or smaller blocks"},
		{name: "missing file", blocks: []Block{{Type: "text", Text: "a"}, {Type: "text", Text: "b"}, {Type: "image", Path: "x.png"}},
			index: 2, field: "path", fsError: fs.ErrNotExist,
			want: `content[2].path "x.png": no such file (looked for ` + missing + `; paths are relative to the run's working directory)`},
		{name: "missing absolute file", blocks: []Block{{Type: "file", Path: missing}}, field: "path", fsError: fs.ErrNotExist,
			want: fmt.Sprintf("content[0].path %q: no such file", missing)},
		{name: "directory", blocks: []Block{{Type: "file", Path: "folder"}}, sent: ErrNotFile, field: "path",
			want: `content[0].path "folder": is a directory; name a file`},
		{name: "binary file", blocks: []Block{{Type: "file", Path: "bin.dat"}}, sent: ErrNotText, field: "path",
			want: `content[0].path "bin.dat": not a text file (NUL byte at offset 3); send images as image blocks, other binary files are not supported`},
		{name: "file not UTF-8", blocks: []Block{{Type: "file", Path: "latin1.txt"}}, sent: ErrNotText, field: "path",
			want: `content[0].path "latin1.txt": not a text file (invalid UTF-8 at offset 3); convert it to UTF-8`},
		{name: "an image as a file", blocks: []Block{{Type: "file", Path: "shot.png"}}, sent: ErrNotText, field: "path",
			want: `content[0].path "shot.png": not a text file (NUL byte at offset 8); send images as image blocks, other binary files are not supported`},
		{name: "long path cut in the message", blocks: []Block{{Type: "file", Path: strings.Repeat("é", 100)}}, field: "path", fsError: fs.ErrNotExist,
			want: `content[0].path "` + strings.Repeat("é", 60) + `"…: no such file (looked for ` + filepath.Join(dir, strings.Repeat("é", 100)) +
				`; paths are relative to the run's working directory)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Build(tt.prompt, tt.blocks, dir, tt.lim)
			if err == nil {
				t.Fatalf("Build succeeded with %s, want an error", out)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n%s\nwant\n%s", err, tt.want)
			}
			var be *BlockError
			if !errors.As(err, &be) {
				t.Fatalf("error %T is not a *BlockError", err)
			}
			if be.Index != tt.index || be.Field != tt.field {
				t.Errorf("Index, Field = %d, %q; want %d, %q", be.Index, be.Field, tt.index, tt.field)
			}
			if tt.sent != nil && !errors.Is(err, tt.sent) {
				t.Errorf("error does not wrap %v", tt.sent)
			}
			if tt.fsError != nil && !errors.Is(err, tt.fsError) {
				t.Errorf("error does not wrap %v", tt.fsError)
			}
		})
	}
}
