package acp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/claude-relay/claude-relay/executor"
	"github.com/claude-relay/claude-relay/internal/content"
	"github.com/claude-relay/claude-relay/internal/relay"
	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// promptContent turns an ACP prompt into our content blocks: text as is,
// images inline, a resource link as a file the CLI reads in (file: URIs) or
// a mention of its URI, an embedded resource as its text with its URI, the
// way the reference adapter presents context.
func promptContent(blocks []acpsdk.ContentBlock) ([]content.Block, error) {
	var out []content.Block
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			out = append(out, content.Block{Type: "text", Text: b.Text.Text})
		case b.Image != nil:
			if _, err := base64.StdEncoding.DecodeString(b.Image.Data); err != nil {
				return nil, fmt.Errorf("prompt[%d]: image data is not base64: %w", i, err)
			}
			out = append(out, content.Block{Type: "image", MediaType: b.Image.MimeType, Data: b.Image.Data})
		case b.ResourceLink != nil:
			out = append(out, content.Block{Type: "text", Text: mention(b.ResourceLink.Uri)})
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				out = append(out, content.Block{Type: "text", Text: mention(r.TextResourceContents.Uri)},
					content.Block{Type: "text", Text: "<context ref=\"" + r.TextResourceContents.Uri + "\">\n" + r.TextResourceContents.Text + "\n</context>"})
			case r.BlobResourceContents != nil:
				mime := ""
				if r.BlobResourceContents.MimeType != nil {
					mime = *r.BlobResourceContents.MimeType
				}
				if !strings.HasPrefix(mime, "image/") {
					return nil, fmt.Errorf("prompt[%d]: an embedded binary resource (%s) is not supported; send images as image blocks", i, orText(mime, "no mimeType"))
				}
				out = append(out, content.Block{Type: "image", MediaType: mime, Data: r.BlobResourceContents.Blob})
			default:
				return nil, fmt.Errorf("prompt[%d]: an embedded resource without contents", i)
			}
		case b.Audio != nil:
			return nil, fmt.Errorf("prompt[%d]: audio is not supported (promptCapabilities.audio is false)", i)
		default:
			return nil, fmt.Errorf("prompt[%d]: an empty content block", i)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("prompt: no content blocks")
	}
	return out, nil
}

// mention is how a referenced file or URI reads in the prompt: a file URI as
// @path, which the CLI resolves, anything else as the URI itself.
func mention(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return "@" + u.Path
	}
	return uri
}

// stopReason maps how a turn ended to ACP's stop reasons.
func stopReason(res *streamjson.Result, refusal bool) acpsdk.StopReason {
	switch {
	case refusal:
		return acpsdk.StopReasonRefusal
	case res != nil && res.Subtype == streamjson.ResultErrorMaxTurns:
		return acpsdk.StopReasonMaxTurnRequests
	default:
		return acpsdk.StopReasonEndTurn
	}
}

// notLoggedIn reports a turn that failed for want of credentials; the
// executor has already turned the CLI's words into advice.
func notLoggedIn(end *relay.End) bool {
	text := strings.ToLower(end.Reason + " " + end.Result.Stderr)
	return end.Status == executor.StatusFailed && (strings.Contains(text, "not logged in") || strings.Contains(text, "invalid api key") ||
		strings.Contains(text, "/login"))
}
