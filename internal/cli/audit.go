package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/claude-relay/claude-relay/internal/wire"
)

// auditTokenEnv holds a token with the audit scope for `audit export`
// (a collector's job has it in its environment; the helper's token lacks
// the scope by design).
const auditTokenEnv = "CLAUDE_RELAY_AUDIT_TOKEN"

func newAuditCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Export the backend's audit trail (approvals, policy, budgets, modes, billing, run ends)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unknown audit command %q (export)", errUsage, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAuditExportCmd(a))
	return cmd
}

type auditExportOptions struct {
	from, to, project, after string
	out, tokenFile           string
}

func newAuditExportCmd(a *App) *cobra.Command {
	var o auditExportOptions
	cmd := &cobra.Command{
		Use:   "export [--from T] [--to T] [--project DIR] [--out FILE]",
		Short: "Write the audit trail as JSON Lines, the same bytes as GET /api/audit",
		Long: "Pages through GET /api/audit of the configured backend (backend.url, else this data dir's\n" +
			"running serve) and writes every record, in order, to --out (default stdout). The token\n" +
			"needs the audit scope (`claude-relay token create --scope audit`, or admin): --token-file,\n" +
			"else $" + auditTokenEnv + ", else backend.token. --from and --to bound the backend's receive\n" +
			"time (RFC 3339 or a UTC date); --after continues after a record's cursor. See docs/audit.md.",
		Example: "  claude-relay audit export --from 2026-11-01 --to 2026-12-01 --out november.jsonl\n" +
			"  CLAUDE_RELAY_AUDIT_TOKEN=$(cat siem.token) claude-relay audit export --project /work/app",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAuditExport(cmd.Context(), a, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "records received at or after this time (RFC 3339 or YYYY-MM-DD, UTC)")
	f.StringVar(&o.to, "to", "", "records received before this time (a date includes that day)")
	f.StringVar(&o.project, "project", "", "only sessions of this project (its working directory, exact)")
	f.StringVar(&o.after, "after", "", "continue after this record's cursor")
	f.StringVarP(&o.out, "out", "o", "", "write to this file (0600) instead of stdout")
	f.StringVar(&o.tokenFile, "token-file", "", "read the token (audit scope) from this file")
	return cmd
}

func runAuditExport(ctx context.Context, a *App, o auditExportOptions) error {
	base, err := a.auditBackend(ctx)
	if err != nil {
		return err
	}
	tok, err := a.auditToken(o.tokenFile)
	if err != nil {
		return err
	}
	w, finish, err := auditOutput(a, o.out)
	if err != nil {
		return err
	}
	n, err := exportAudit(ctx, &http.Client{Timeout: 5 * time.Minute}, base, tok, o, w)
	if ferr := finish(err == nil); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if o.out != "" {
		fmt.Fprintf(a.Stderr, "claude-relay: wrote %d audit records to %s\n", n, o.out)
	}
	return nil
}

// auditBackend is the URL to export from: backend.url, else this data
// dir's running serve. No embedded backend is started for an export: one
// started here would serve the same data dir's database, which a running
// serve already does, and without a serve nobody has written to it lately.
func (a *App) auditBackend(ctx context.Context) (string, error) {
	if u := a.loaded.Config.Backend.URL; u != "" {
		return strings.TrimRight(u, "/"), nil
	}
	if info, ok := a.runningServe(ctx); ok {
		return strings.TrimRight(info.URL, "/"), nil
	}
	return "", fmt.Errorf("%w: no backend to export from: set backend.url, or start `claude-relay serve` on data dir %s",
		errUsage, a.loaded.Config.DataDir)
}

// auditToken is --token-file's token, else $CLAUDE_RELAY_AUDIT_TOKEN's,
// else backend.token.
func (a *App) auditToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%w: read --token-file: %w", errUsage, err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("%w: --token-file %s is empty", errUsage, file)
	}
	if a.LookupEnv != nil {
		if t, ok := a.LookupEnv(auditTokenEnv); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t), nil
		}
	}
	if t := a.loaded.Config.Backend.Token.Reveal(); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("%w: no token with the audit scope: create one with `claude-relay token create --scope audit` "+
		"and pass it with --token-file or $%s", errUsage, auditTokenEnv)
}

// auditOutput is stdout, or a private file written in place of FILE only
// when the export finished (finish(true)), so a failed export never leaves
// a partial trail under the name asked for.
func auditOutput(a *App, out string) (io.Writer, func(ok bool) error, error) {
	if out == "" || out == "-" {
		bw := bufio.NewWriter(a.Stdout)
		return bw, func(bool) error { return bw.Flush() }, nil
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return nil, nil, fmt.Errorf("audit export: %w", err)
	}
	bw := bufio.NewWriter(f)
	return bw, func(ok bool) error {
		err := errors.Join(bw.Flush(), f.Close())
		if ok && err == nil {
			err = os.Rename(f.Name(), out)
		}
		if !ok || err != nil {
			_ = os.Remove(f.Name())
		}
		if err != nil {
			return fmt.Errorf("audit export: write %s: %w", out, err)
		}
		return nil
	}, nil
}

// exportAudit copies every page of the trail to w, byte for byte as the
// API sends it, and returns how many records it wrote.
func exportAudit(ctx context.Context, c *http.Client, base, tok string, o auditExportOptions, w io.Writer) (int, error) {
	after, total := o.after, 0
	for {
		q := url.Values{"limit": {strconv.Itoa(wire.MaxAuditPage)}}
		for k, v := range map[string]string{"from": o.from, "to": o.to, "project": o.project, "after": after} {
			if v != "" {
				q.Set(k, v)
			}
		}
		n, next, err := auditPage(ctx, c, base+"/api/audit?"+q.Encode(), tok, w)
		total += n
		if err != nil {
			return total, err
		}
		if n < wire.MaxAuditPage {
			return total, nil
		}
		after = next
	}
}

// auditPage copies one page to w: its record count and the cursor to go
// on from (the trailer, else the last record's).
func auditPage(ctx context.Context, c *http.Client, u, tok string, w io.Writer) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("audit export: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return 0, "", fmt.Errorf("audit export: GET /api/audit: %s: %s", resp.Status, msg)
	}
	var (
		n    int
		last []byte
	)
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				return n, "", fmt.Errorf("audit export: the backend's answer ended inside a record (after %d records)", n)
			}
			if _, werr := w.Write(line); werr != nil {
				return n, "", fmt.Errorf("audit export: %w", werr)
			}
			n++
			last = line
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, "", fmt.Errorf("audit export: read the answer: %w", err)
		}
	}
	next := resp.Trailer.Get(wire.AuditNextHeader)
	if next == "" && last != nil {
		var rec struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(bytes.TrimSpace(last), &rec)
		next = rec.Cursor
	}
	return n, next, nil
}

// hostname is this machine's name as helpers post it in relay.run_started,
// for the audit trail's machine; "" when the system will not say.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
