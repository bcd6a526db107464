package streamjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// ToolResultKind says which field of a ToolResultContent holds the content.
type ToolResultKind uint8

const (
	// ToolResultText: Text holds the content.
	ToolResultText ToolResultKind = iota
	// ToolResultImage: Image holds one decoded image.
	ToolResultImage
	// ToolResultMixed: Blocks holds text and image blocks, in order.
	ToolResultMixed
)

func (k ToolResultKind) String() string {
	switch k {
	case ToolResultText:
		return "text"
	case ToolResultImage:
		return "image"
	case ToolResultMixed:
		return "mixed"
	}
	return "unknown"
}

// Image is a decoded image, e.g. from the Read tool on a PNG file.
type Image struct {
	Data      []byte
	MediaType string // "image/png", "image/jpeg", "image/gif", "image/webp"
}

// ToolResultContent is a tool_result's content in the form a UI wants.
type ToolResultContent struct {
	Kind   ToolResultKind
	Text   string
	Image  Image
	Blocks []ContentBlock
}

// ParseToolResultContent interprets a tool_result block's content as seed 000
// §3.6 does:
//   - a JSON string → Text;
//   - an array of only text blocks → Text, the texts joined with "\n\n"
//     (an empty array → empty Text);
//   - an array of exactly one image block with valid base64 data → Image;
//   - any other array of text and image blocks → Mixed;
//   - anything else (null, an object, an array holding other things) → Text
//     holding the value's compact JSON; null or missing content gives "".
//
// It never fails: raw that is not valid JSON comes back as Text verbatim.
func ParseToolResultContent(raw json.RawMessage) ToolResultContent {
	switch firstByte(raw) {
	case 0:
		return ToolResultContent{}
	case '"':
		var s string
		if unmarshalLoose(raw, &s) {
			return ToolResultContent{Text: s}
		}
	case '[':
		if c, ok := parseToolResultBlocks(raw); ok {
			return c
		}
	case 'n':
		if string(bytes.TrimSpace(raw)) == "null" {
			return ToolResultContent{}
		}
	}
	return ToolResultContent{Text: compactText(raw)}
}

// parseToolResultBlocks handles the array case. It reports false when the
// array holds anything but text and image blocks; the seed then falls back to
// the JSON text, and so do we.
func parseToolResultBlocks(raw json.RawMessage) (ToolResultContent, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return ToolResultContent{}, false
	}
	blocks := make([]ContentBlock, 0, len(items))
	texts := make([]string, 0, len(items))
	for _, item := range items {
		if firstByte(item) != '{' {
			return ToolResultContent{}, false
		}
		var b ContentBlock
		_ = b.UnmarshalJSON(item) // never fails
		switch {
		case b.Type == BlockText:
			texts = append(texts, b.Text)
		case b.Type == BlockImage && b.Source != nil:
		default:
			return ToolResultContent{}, false
		}
		blocks = append(blocks, b)
	}
	if len(texts) == len(blocks) {
		return ToolResultContent{Text: strings.Join(texts, "\n\n")}, true
	}
	if len(blocks) == 1 {
		if img, ok := decodeImage(blocks[0].Source); ok {
			return ToolResultContent{Kind: ToolResultImage, Image: img}, true
		}
	}
	return ToolResultContent{Kind: ToolResultMixed, Blocks: blocks}, true
}

// decodeImage decodes a base64 image source, accepting data with or without
// padding because encoders differ on it.
func decodeImage(src *ImageSource) (Image, bool) {
	if src == nil || src.Type != "base64" {
		return Image{}, false
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil {
		data, err = base64.RawStdEncoding.DecodeString(src.Data)
	}
	if err != nil {
		return Image{}, false
	}
	return Image{Data: data, MediaType: src.MediaType}, true
}

// compactText returns raw's compact JSON form, or raw itself if it is not
// valid JSON.
func compactText(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// JSON parses Text when it holds a JSON object or array, as structured tool
// output often does. Scalars are not taken: tool output such as "42" or
// "true" is far more often plain text than JSON. Numbers come back as
// json.Number so large integers keep their precision.
func (c ToolResultContent) JSON() (any, bool) {
	if c.Kind != ToolResultText {
		return nil, false
	}
	s := strings.TrimSpace(c.Text)
	if s == "" || (s[0] != '{' && s[0] != '[') || !json.Valid([]byte(s)) {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}
