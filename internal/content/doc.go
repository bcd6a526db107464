// Package content turns a prompt's text and its "content" blocks (CONTRACT
// §7) into the Messages-API content array the Claude Code CLI takes in a
// stream-json user message:
//
//	{"type":"user","message":{"role":"user","content":<Build's output>}}
//
// The protocol's blocks are small and flat; the API's are not, and the CLI
// sends what it is given without checking it. So everything the API would
// refuse mid-run (a truncated or mislabelled image, a binary "text" file, an
// image over the API's 5 MiB limit) is refused here instead, before a CLI is
// started, with an error naming the block: content[2].path "x.png": no such
// file.
//
// What each block becomes, in order, after the prompt text (if any):
//
//   - {"type":"text","text":T} stays a text block; blank text is refused.
//   - {"type":"image","data":B64} and {"type":"image","path":P} become
//     {"type":"image","source":{"type":"base64","media_type":M,"data":B64}}.
//     The bytes must be a PNG, JPEG, GIF or WebP image (found from their
//     magic number, the formats the API takes); M is that sniffed type, and a
//     media_type given in the block must agree with it. Data may be standard
//     base64 with or without padding (line breaks are ignored); the output is
//     always padded standard base64.
//   - {"type":"file","path":P} becomes a text block: the path as given, a
//     colon and a newline, then the file inside a Markdown code fence (see
//     below). The file must be text: valid UTF-8 without NUL bytes.
//
// A file block for notes/todo.txt holding "first line\n" becomes the text
//
//	notes/todo.txt:
//	```
//	first line
//	```
//
// The fence is one backtick longer than the longest run of backticks in the
// file (at least three), so a Markdown file cannot close it early; a file
// that does not end in a newline gets one before the closing fence.
//
// Paths are relative to the run's working directory; absolute paths are
// taken as they are. Files are stat'ed before they are read, so a 50 MB file
// is refused without being read. Sizes are limited per image, per file and
// in total ([Limits]); the zero Limits means the defaults.
//
// The output is deterministic: the same input gives the same bytes.
package content
