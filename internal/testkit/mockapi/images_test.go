package mockapi_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
)

func TestRequestImages(t *testing.T) {
	srv := mockapi.New(t, mockapi.Script{mockapi.TextTurn("a picture")})
	pic := []byte("\x89PNG\r\n\x1a\nnot really")
	req := body(0, true)
	req["messages"] = []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(pic)}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.png"}},
	}}}
	streamed(t, srv, req)
	got, ok := srv.LastMainRequest()
	if !ok {
		t.Fatal("no main request recorded")
	}
	imgs, err := got.Images()
	if err != nil {
		t.Fatalf("Images: %v", err)
	}
	if len(imgs) != 2 {
		t.Fatalf("Images returned %d images, want 2: %+v", len(imgs), imgs)
	}
	if im := imgs[0]; im.Role != "user" || im.Message != 0 || im.SourceType != "base64" || im.MediaType != "image/png" || !bytes.Equal(im.Data, pic) {
		t.Errorf("first image %+v, want the base64 PNG bytes", im)
	}
	if im := imgs[1]; im.SourceType != "url" || im.Data != nil {
		t.Errorf("second image %+v, want a url source without data", im)
	}
}

func TestRequestImagesBadData(t *testing.T) {
	r := mockapi.Request{Messages: []mockapi.Message{{Role: "user", Content: []mockapi.Content{
		{Type: "image", Source: &mockapi.ImageSource{Type: "base64", MediaType: "image/png", Data: "!!"}},
	}}}}
	if _, err := r.Images(); err == nil {
		t.Fatal("Images accepted data that is not base64")
	}
}
