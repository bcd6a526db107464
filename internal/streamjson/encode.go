package streamjson

import (
	"bytes"
	"encoding/json"
)

// UserMessage returns the line that sends text to the CLI as the user's next
// prompt: {"type":"user","message":{"role":"user","content":TEXT}}. Invalid
// UTF-8 in text is replaced by U+FFFD, as encoding/json does.
func UserMessage(text string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, err := marshalCompact(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{TypeUser, message{"user", text}})
	if err != nil {
		panic("streamjson: encoding strings cannot fail: " + err.Error())
	}
	return b
}

// marshalCompact is json.Marshal without HTML escaping: the CLI reads JSON,
// not HTML, and prompts full of "<" and "&" stay readable in logs. The result
// has no trailing newline.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// marshalWithSubtype encodes v, which must marshal to a JSON object, with
// "subtype" as its first key.
func marshalWithSubtype(subtype string, v any) ([]byte, error) {
	body, err := marshalCompact(v)
	if err != nil {
		return nil, err
	}
	head, err := marshalCompact(subtype)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(head)+12)
	out = append(out, `{"subtype":`...)
	out = append(out, head...)
	if rest := body[1:]; len(rest) > 1 { // body is "{...}"; rest is "...}" or "}"
		out = append(out, ',')
		out = append(out, rest...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}
