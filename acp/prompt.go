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
	"github.com/claude-relay/claude-relay/internal/wire"
)

// promptContent turns an ACP prompt into our content blocks: text as is,
// images inline, a resource link as a file the CLI reads in (file: URIs) or
// a mention of its URI, an embedded resource as its text with its URI, the
// way the reference adapter presents context. Blank text blocks add nothing
// and are left out.
//
// It also makes the prompt's record (relay.message_sent) in ACP's own
// terms, one entry per block the client sent: the text is every text block
// and every mention, joined in order; resource links and embedded resources
// are described as such, the bytes the client sent (images, embedded
// resources) with their SHA-256.
func promptContent(blocks []acpsdk.ContentBlock) ([]content.Block, wire.PromptRecord, error) {
	var (
		out   []content.Block
		texts []string
		desc  []wire.PromptBlock
	)
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			desc = append(desc, wire.PromptBlock{Type: wire.BlockText, Size: int64(len(b.Text.Text))})
			if strings.TrimSpace(b.Text.Text) == "" {
				continue
			}
			out = append(out, content.Block{Type: "text", Text: b.Text.Text})
			texts = append(texts, b.Text.Text)
		case b.Image != nil:
			data, err := base64.StdEncoding.DecodeString(b.Image.Data)
			if err != nil {
				return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: image data is not base64: %w", i, err)
			}
			out = append(out, content.Block{Type: "image", MediaType: b.Image.MimeType, Data: b.Image.Data})
			desc = append(desc, wire.PromptBlock{Type: wire.BlockImage, Path: deref(b.Image.Uri), MediaType: b.Image.MimeType,
				Size: int64(len(data)), SHA256: wire.SHA256(data)})
		case b.ResourceLink != nil:
			l := b.ResourceLink
			out = append(out, content.Block{Type: "text", Text: mention(l.Uri)})
			texts = append(texts, mention(l.Uri))
			d := wire.PromptBlock{Type: wire.BlockResourceLink, Name: l.Name, Path: l.Uri, MediaType: deref(l.MimeType)}
			if l.Size != nil && *l.Size > 0 {
				d.Size = int64(*l.Size)
			}
			desc = append(desc, d)
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				tr := r.TextResourceContents
				out = append(out, content.Block{Type: "text", Text: mention(tr.Uri)},
					content.Block{Type: "text", Text: "<context ref=\"" + tr.Uri + "\">\n" + tr.Text + "\n</context>"})
				texts = append(texts, mention(tr.Uri))
				desc = append(desc, wire.PromptBlock{Type: wire.BlockResource, Path: tr.Uri, MediaType: deref(tr.MimeType),
					Size: int64(len(tr.Text)), SHA256: wire.SHA256([]byte(tr.Text))})
			case r.BlobResourceContents != nil:
				br := r.BlobResourceContents
				mime := deref(br.MimeType)
				if !strings.HasPrefix(mime, "image/") {
					return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: an embedded binary resource (%s, %s) is not supported; send images as image blocks and other files as resource links", i, orText(mime, "no mimeType"), br.Uri)
				}
				data, err := base64.StdEncoding.DecodeString(br.Blob)
				if err != nil {
					return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: the embedded resource's blob is not base64: %w", i, err)
				}
				out = append(out, content.Block{Type: "image", MediaType: mime, Data: br.Blob})
				desc = append(desc, wire.PromptBlock{Type: wire.BlockResource, Path: br.Uri, MediaType: mime,
					Size: int64(len(data)), SHA256: wire.SHA256(data)})
			default:
				return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: an embedded resource without contents", i)
			}
		case b.Audio != nil:
			return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: audio is not supported (promptCapabilities.audio is false)", i)
		default:
			return nil, wire.PromptRecord{}, fmt.Errorf("prompt[%d]: an empty content block", i)
		}
	}
	if len(out) == 0 {
		if len(blocks) > 0 {
			return nil, wire.PromptRecord{}, errors.New("prompt: every block is blank text; send what to ask")
		}
		return nil, wire.PromptRecord{}, errors.New("prompt: no content blocks")
	}
	return out, wire.RecordPrompt(wire.JoinPrompt(texts...), desc), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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

// notLoggedIn reports a turn that failed for want of credentials.
func notLoggedIn(end *relay.End) bool {
	return end.Status == executor.StatusFailed && errors.Is(end.Cause, executor.ErrNotLoggedIn)
}
