package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []Scope
		set  string
		err  bool
	}{
		{nil, nil, "ingest, read", false},
		{[]string{"approve"}, []Scope{Approve}, "read, approve", false},
		{[]string{"approve+read", "read"}, []Scope{Read, Approve}, "read, approve", false},
		{[]string{"INGEST,approve"}, []Scope{Ingest, Approve}, "ingest, read, approve", false},
		{[]string{"admin"}, []Scope{Admin}, "ingest, read, approve, audit, admin", false},
		{[]string{"ingest"}, []Scope{Ingest}, "ingest", false},
		{[]string{"aprove"}, nil, "", true},
	} {
		got, err := ParseScopes(tc.in...)
		if tc.err {
			if !errors.Is(err, ErrUnknownScope) || !strings.Contains(err.Error(), `"aprove"`) || !strings.Contains(err.Error(), Allowed()) {
				t.Errorf("%q: err %v", tc.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if s := SetOf(got).String(); s != tc.set {
			t.Errorf("%q: effective %q, want %q", tc.in, s, tc.set)
		}
	}
	if SetOf([]Scope{Ingest}).Has(Read) || !SetOf([]Scope{Approve}).Has(Read) || SetOf([]Scope{Approve}).Has(Ingest) {
		t.Error("implications wrong")
	}
}

// TestCreateListRevoke: the file holds digests only, 0600; the token
// matches its entry; revoke by id or name.
func TestCreateListRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", FileName)
	f := Open(path)
	if e, err := f.Entries(); err != nil || len(e) != 0 {
		t.Fatalf("missing file: %v, %v", e, err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	tok, e, err := f.Create("phone", []Scope{Approve}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, Prefix) || len(tok) < len(Prefix)+40 || e.Name != "phone" || e.ID == "" {
		t.Fatalf("token %q entry %+v", tok, e)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), tok) || strings.Contains(string(b), tok[len(Prefix):]) || strings.Contains(string(b), CookieMAC(tok)) {
		t.Fatalf("the file holds the token or its cookie:\n%s", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	tok2, e2, err := f.Create("", []Scope{Read}, now)
	if err != nil || tok2 == tok || e2.Name != "token-"+e2.ID {
		t.Fatalf("second: %q %+v %v", tok2, e2, err)
	}
	if _, _, err := f.Create("phone", []Scope{Read}, now); !errors.Is(err, ErrNameTaken) {
		t.Errorf("same name: %v", err)
	}
	if _, _, err := f.Create("a:b", []Scope{Read}, now); !errors.Is(err, ErrBadName) {
		t.Errorf("bad name: %v", err)
	}
	if _, _, err := f.Create("x", nil, now); !errors.Is(err, ErrNoScopes) {
		t.Errorf("no scopes: %v", err)
	}

	// Another process's view (another File) sees both, and the digests match.
	other := Open(path)
	entries, err := other.Entries()
	if err != nil || len(entries) != 2 {
		t.Fatalf("entries %v, %v", entries, err)
	}
	ts, cs := entries[0].Digests()
	if ts != Digest(tok) || ts == Digest(tok2) || cs != Digest(CookieMAC(tok)) || !entries[0].CreatedAt.Equal(now.Truncate(time.Second)) {
		t.Errorf("entry 0 %+v does not match its token", entries[0])
	}

	// Revoke through f; other notices on its next call.
	if gone, err := f.Revoke("phone"); err != nil || gone.ID != e.ID {
		t.Fatalf("revoke by name: %+v, %v", gone, err)
	}
	if entries, _ := other.Entries(); len(entries) != 1 || entries[0].ID != e2.ID {
		t.Fatalf("after revoke: %+v", entries)
	}
	if _, err := f.Revoke(e2.ID); err != nil {
		t.Fatalf("revoke by id: %v", err)
	}
	if _, err := f.Revoke(e2.ID); !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "token list") {
		t.Errorf("revoke again: %v", err)
	}
	if entries, _ := other.Entries(); len(entries) != 0 {
		t.Errorf("after revoking both: %+v", entries)
	}
}

// TestConcurrentCreates: creates racing through separate Files (as
// separate processes would) all survive.
func TestConcurrentCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := Open(path).Create("", []Scope{Read}, time.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if entries, err := Open(path).Entries(); err != nil || len(entries) != 8 {
		t.Errorf("%d entries, %v; want 8", len(entries), err)
	}
}

// TestBadFile: a damaged file is an error naming it (callers then accept
// none of its tokens), and the cache follows a repair.
func TestBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	f := Open(path)
	for _, content := range []string{
		"{not json",
		`{"version":2,"tokens":[]}`,
		`{"version":1,"tokens":[{"id":"a","scopes":["read"],"token_sha256":"zz","cookie_sha256":""}]}`,
		`{"version":1,"tokens":[{"id":"a","scopes":["root"],"token_sha256":"` + strings.Repeat("0", 64) + `","cookie_sha256":"` + strings.Repeat("0", 64) + `"}]}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Entries(); !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v", content, err)
		}
		os.Remove(path) // a new inode each time, whatever the clock's granularity
	}
	if _, _, err := f.Create("ok", []Scope{Read}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if entries, err := f.Entries(); err != nil || len(entries) != 1 {
		t.Errorf("after repair: %v, %v", entries, err)
	}
}
