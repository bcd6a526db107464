//go:build unix

package content

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/testkit/mockapi"
	"github.com/claude-relay/claude-relay/internal/testkit/realcli"
)

// TestRealCLISendsImageBlock runs the pinned CLI in stream-json input mode
// with a user message whose content is Build's output for a PNG file, and
// checks that the Messages API received an image block with exactly the
// file's bytes: the CLI passes the blocks through as the API takes them.
func TestRealCLISendsImageBlock(t *testing.T) {
	cli := realcli.RealCLI(t)
	api := mockapi.New(t, mockapi.Script{mockapi.TextTurn("A red dot on white.")})
	cwd := t.TempDir()
	cli.TrustDir(cwd)
	pic := pngBytes(t)
	writeFile(t, cwd, "dot.png", pic)
	content, err := Build("What is in this picture?", []Block{{Type: TypeImage, Path: "dot.png"}}, cwd, Limits{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	result := runStreamJSON(t, ctx, cli, cwd, api.URL(), content)
	if result["subtype"] != "success" || result["is_error"] != false {
		t.Errorf("result line %v, want a success", result)
	}

	req, ok := api.LastMainRequest()
	if !ok {
		t.Fatal("the API got no main-conversation request")
	}
	imgs, err := req.Images()
	if err != nil {
		t.Fatalf("images of the API request: %v", err)
	}
	if len(imgs) != 1 {
		t.Fatalf("the API request holds %d images, want 1: %+v", len(imgs), imgs)
	}
	if im := imgs[0]; im.Role != "user" || im.SourceType != "base64" || im.MediaType != MediaPNG || !bytes.Equal(im.Data, pic) {
		t.Errorf("image block %s %s %s with %d bytes, want the user's PNG with %d bytes",
			im.Role, im.SourceType, im.MediaType, len(im.Data), len(pic))
	}
	var sawText bool
	for _, c := range req.Messages[imgs[0].Message].Content {
		sawText = sawText || (c.Type == "text" && c.Text == "What is in this picture?")
	}
	if !sawText {
		t.Errorf("the image's message %+v lacks the prompt text", req.Messages[imgs[0].Message])
	}
}

// runStreamJSON starts the CLI as `claude -p --input-format stream-json
// --output-format stream-json --verbose`, writes one user message with the
// given content, reads stdout up to the result line, then closes stdin and
// waits for the CLI to exit. It returns the result line.
func runStreamJSON(t *testing.T, ctx context.Context, cli *realcli.CLI, cwd, apiURL string, content json.RawMessage) map[string]any {
	t.Helper()
	cmd := exec.CommandContext(ctx, cli.Path, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--max-turns", "1")
	cmd.Dir, cmd.Env = cwd, cli.Env(t, apiURL)
	// Its own process group, killed whole when ctx ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cli.Path, err)
	}
	// On a failure below, end the process before the test does: it dies
	// with its group, then its pipes are drained and it is reaped.
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Cancel()
			_, _ = io.Copy(io.Discard, stdout)
			_ = cmd.Wait()
		}
	}()

	line, err := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}})
	if err != nil {
		t.Fatalf("encode user message: %v", err)
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("write user message: %v", err)
	}

	// Lines are read here, not in a goroutine: ctx ending kills the group,
	// which closes stdout and ends the scan.
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line is not JSON: %v: %.300s", err, sc.Bytes())
		}
		t.Logf("stdout: %.300s", sc.Bytes())
		if l["type"] != "result" {
			continue
		}
		if err := stdin.Close(); err != nil {
			t.Errorf("close stdin: %v", err)
		}
		if _, err := io.Copy(io.Discard, stdout); err != nil {
			t.Errorf("read stdout after the result: %v", err)
		}
		waited = true
		if err := cmd.Wait(); err != nil {
			t.Errorf("CLI exit after stdin closed: %v; stderr:\n%s", err, stderr.String())
		}
		return l
	}
	t.Fatalf("stdout ended before a result line (scan: %v, ctx: %v); stderr:\n%s", sc.Err(), ctx.Err(), stderr.String())
	return nil
}
