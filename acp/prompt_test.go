package acp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// An ACP prompt becomes the CLI's content and the record of what was
// asked, in ACP's terms: the text (with the mentions the CLI resolves) and
// one description per block the client sent.
func TestPromptContentRecord(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	b64 := base64.StdEncoding.EncodeToString(png)
	mime, size := "text/x-go", 120
	blocks := []acpsdk.ContentBlock{
		acpsdk.TextBlock("Why does "),
		{ResourceLink: &acpsdk.ContentBlockResourceLink{Type: "resource_link", Name: "main.go", Uri: "file:///w/main.go", MimeType: &mime, Size: &size}},
		acpsdk.TextBlock(" fail? See"),
		acpsdk.TextBlock(""),
		acpsdk.ImageBlock(b64, "image/png"),
		{Resource: &acpsdk.ContentBlockResource{Type: "resource", Resource: acpsdk.EmbeddedResourceResource{
			TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///w/log.txt", Text: "panic: boom"}}}},
		{Resource: &acpsdk.ContentBlockResource{Type: "resource", Resource: acpsdk.EmbeddedResourceResource{
			BlobResourceContents: &acpsdk.BlobResourceContents{Uri: "file:///w/shot.png", Blob: b64, MimeType: ptr("image/png")}}}},
	}
	out, rec, err := promptContent(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 7 { // blank text left out; the embedded text resource is a mention and its context
		t.Errorf("%d content blocks, want 7: %+v", len(out), out)
	}
	if want := "Why does @/w/main.go fail? See\n\n@/w/log.txt"; rec.Prompt != want {
		t.Errorf("recorded text %q, want %q", rec.Prompt, want)
	}
	if strings.Contains(rec.Prompt, "panic: boom") {
		t.Error("the record's text holds an embedded resource's contents")
	}
	want := []wire.PromptBlock{
		{Type: "text", Size: 9},
		{Type: "resource_link", Name: "main.go", Path: "file:///w/main.go", MediaType: "text/x-go", Size: 120},
		{Type: "text", Size: 10},
		{Type: "text", Size: 0},
		{Type: "image", MediaType: "image/png", Size: int64(len(png)), SHA256: wire.SHA256(png)},
		{Type: "resource", Path: "file:///w/log.txt", Size: 11, SHA256: wire.SHA256([]byte("panic: boom"))},
		{Type: "resource", Path: "file:///w/shot.png", MediaType: "image/png", Size: int64(len(png)), SHA256: wire.SHA256(png)},
	}
	if g, w := marshal(t, rec.Blocks), marshal(t, want); g != w {
		t.Errorf("blocks\n got %s\nwant %s", g, w)
	}
}

func TestPromptContentRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks []acpsdk.ContentBlock
		want   string
	}{
		{"none", nil, "prompt: no content blocks"},
		{"blank text only", []acpsdk.ContentBlock{acpsdk.TextBlock(" \n")}, "every block is blank text"},
		{"bad image data", []acpsdk.ContentBlock{acpsdk.ImageBlock("not base64!", "image/png")}, "prompt[0]: image data is not base64"},
		{"audio", []acpsdk.ContentBlock{acpsdk.TextBlock("x"), acpsdk.AudioBlock("AAAA", "audio/wav")}, "prompt[1]: audio is not supported"},
		{"binary resource", []acpsdk.ContentBlock{{Resource: &acpsdk.ContentBlockResource{Type: "resource", Resource: acpsdk.EmbeddedResourceResource{
			BlobResourceContents: &acpsdk.BlobResourceContents{Uri: "file:///w/a.zip", Blob: "AAAA", MimeType: ptr("application/zip")}}}}},
			"prompt[0]: an embedded binary resource (application/zip, file:///w/a.zip) is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := promptContent(tc.blocks); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// messagesSent decodes a session's relay.message_sent events.
func (s *spool) messagesSent(t *testing.T, session string) []wire.MessageSent {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wire.MessageSent
	for _, e := range s.evs {
		if e.SessionID == session && e.Type == wire.TypeMessageSent {
			var m wire.MessageSent
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// runStarted decodes a session's first relay.run_started.
func (s *spool) runStarted(t *testing.T, session string) wire.RunStarted {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		if e.SessionID == session && e.Type == wire.TypeRunStarted {
			var rs wire.RunStarted
			if err := json.Unmarshal(e.Data, &rs); err != nil {
				t.Fatal(err)
			}
			return rs
		}
	}
	t.Fatalf("session %s has no relay.run_started", session)
	return wire.RunStarted{}
}
