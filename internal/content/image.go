package content

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// Media types the Messages API takes for images.
const (
	MediaPNG  = "image/png"
	MediaJPEG = "image/jpeg"
	MediaGIF  = "image/gif"
	MediaWebP = "image/webp"
)

// formats maps each supported media type to the name used in messages.
var formats = []struct{ media, name string }{
	{MediaPNG, "PNG"},
	{MediaJPEG, "JPEG"},
	{MediaGIF, "GIF"},
	{MediaWebP, "WebP"},
}

// sniff returns the media type of an image from its magic number, or "".
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return MediaPNG
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return MediaJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return MediaGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return MediaWebP
	}
	return ""
}

func formatName(media string) string {
	for _, f := range formats {
		if f.media == media {
			return f.name
		}
	}
	return media
}

// knownMedia returns the canonical form of a declared media type (media
// types are case-insensitive), or "" when the API does not take it.
func knownMedia(declared string) string {
	for _, f := range formats {
		if strings.EqualFold(declared, f.media) {
			return f.media
		}
	}
	return ""
}

func (b *builder) image(i int, blk Block) error {
	if err := onlyFields(i, blk, "data", "path", "media_type"); err != nil {
		return err
	}
	switch {
	case blk.Data == "" && blk.Path == "":
		return blockErr(i, "", "", ErrInvalidBlock, `: an image block needs "data" (base64) or "path"; give one`)
	case blk.Data != "" && blk.Path != "":
		return blockErr(i, "", "", ErrInvalidBlock, `: an image block takes "data" or "path", not both; remove one`)
	}
	declared := ""
	if blk.MediaType != "" {
		if declared = knownMedia(blk.MediaType); declared == "" {
			return blockErr(i, "media_type", blk.MediaType, ErrMediaType, ": not supported; use %s, %s, %s or %s (or leave it out)",
				MediaPNG, MediaJPEG, MediaGIF, MediaWebP)
		}
	}
	var (
		img []byte
		err error
	)
	if blk.Data != "" {
		img, err = b.imageData(i, blk.Data)
	} else {
		img, err = b.readPath(i, blk.Path, kindImage)
	}
	if err != nil {
		return err
	}
	media, err := checkImage(i, blk, declared, img)
	if err != nil {
		return err
	}
	b.out = append(b.out, apiBlock{Type: TypeImage, Source: &imageSource{
		Type: "base64", MediaType: media, Data: base64.StdEncoding.EncodeToString(img),
	}})
	b.rec = append(b.rec, wire.PromptBlock{Type: wire.BlockImage, Path: blk.Path, MediaType: media,
		Size: int64(len(img)), SHA256: wire.SHA256(img)})
	return nil
}

// imageData decodes base64 image data, checking the limits on the decoded
// size before decoding.
func (b *builder) imageData(i int, data string) ([]byte, error) {
	if strings.HasPrefix(data, "data:") {
		return nil, blockErr(i, "data", "", ErrBadBase64, ` is a data URL; send only the base64 after "base64," and put the type in "media_type"`)
	}
	n := decodedLen(data)
	if n > b.lim.MaxImageBytes {
		return nil, tooBig(i, kindImage, "", n, b.lim.MaxImageBytes)
	}
	if err := b.count(i, n); err != nil {
		return nil, err
	}
	img, err := decodeBase64(data)
	if err != nil {
		return nil, blockErr(i, "data", "", fmt.Errorf("%w: %w", ErrBadBase64, err), " is not valid base64 (%v); send the image bytes in standard base64", err)
	}
	return img, nil
}

// checkImage sniffs img and checks it against the declared media type;
// it returns the media type to send.
func checkImage(i int, blk Block, declared string, img []byte) (string, error) {
	field, value, noun := "data", "", "data"
	if blk.Path != "" {
		field, value, noun = "path", blk.Path, "file"
	}
	media := sniff(img)
	if media == "" {
		verb := " is"
		if value != "" {
			verb = ": is"
		}
		return "", blockErr(i, field, value, ErrNotImage, "%s not a PNG, JPEG, GIF or WebP image (it starts with %q); send one of those formats",
			verb, head(img, 8))
	}
	if declared != "" && declared != media {
		return "", blockErr(i, "media_type", blk.MediaType, ErrMediaType, " but the %s is a %s; set media_type to %q or leave it out",
			noun, formatName(media), media)
	}
	return media, nil
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// decodeBase64 takes standard base64 with or without padding; line breaks
// are skipped by the decoder.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err == nil {
		return b, nil
	}
	if raw, rawErr := base64.RawStdEncoding.DecodeString(s); rawErr == nil {
		return raw, nil
	}
	return nil, err
}

// decodedLen is the size base64 s decodes to (exact for valid input), so
// that an oversized image is refused without decoding it.
func decodedLen(s string) int64 {
	n := int64(len(s)) - int64(strings.Count(s, "\n")+strings.Count(s, "\r"))
	s = strings.TrimRight(s, "\r\n")
	for k := 0; k < 2 && strings.HasSuffix(s, "="); k++ {
		s = s[:len(s)-1]
		n--
	}
	return n * 6 / 8
}
