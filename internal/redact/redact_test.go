package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShapes: each credential shape is replaced, keeping what names it.
func TestShapes(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"github classic", "git push https://x ghp_abcdefghijklmnopqrstuvwxyz0123456789", "git push https://x ***"},
		{"github oauth, user, server, refresh", "gho_0123456789abcdefghij ghu_0123456789abcdefghij ghs_0123456789abcdefghij ghr_0123456789abcdefghij", "*** *** *** ***"},
		{"github fine-grained", "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "token ***"},
		{"gitlab", "glpat-abcdefghij0123456789 x", "*** x"},
		{"slack", "xoxb-1234567890-abcdefghij xoxp-1234567890-x xoxa-2-abcdefghijk xoxr-abcdefghijkl", "*** *** *** ***"},
		{"aws", "AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A", "*** and ***"},
		{"anthropic", "sk-ant-api03-abcdefghijklmnop", "***"},
		{"openai", "key sk-proj-abcdefghijklmnopqrst", "key ***"},
		{"ours", "crly_abcdefgh1234", "***"},
		{"assignment", "GITHUB_TOKEN=ghp_short mysql", "GITHUB_TOKEN=*** mysql"},
		{"quoted assignment", `DB_PASSWORD="two words" SECRET='x y' run`, `DB_PASSWORD=*** SECRET=*** run`},
		{"lower-case assignment", "export api_key=abc123; next", "export api_key=***; next"},
		{"query", "https://h/x?access_token=abc&auth=def&page=2", "https://h/x?access_token=***&auth=***&page=2"},
		{"mysql pwd", "MYSQL_PWD=Hunter2 mysql", "MYSQL_PWD=*** mysql"},
		{"json", `{"password": "p\"w", "client_secret":"s", "name":"n"}`, `{"password": "***", "client_secret":"***", "name":"n"}`},
		{"mysql -p", "mysql -u root -pHunter2 shop", "mysql -u root -p*** shop"},
		{"mysqldump -p quoted", "mysqldump -h db -p'hunter 2' shop > x", "mysqldump -h db -p*** shop > x"},
		{"sshpass", "sshpass -p s3cret ssh host", "sshpass -p *** ssh host"},
		{"--password=", "psql --password=hunter2 -h db", "psql --password=*** -h db"},
		{"--token space", "cli --token abc123 go", "cli --token *** go"},
		{"url userinfo", "git clone https://me:hunter2@github.com/x.git", "git clone https://me:***@github.com/x.git"},
		{"postgres url", "postgres://relay:relay@localhost/relay", "postgres://relay:***@localhost/relay"},
		{"bearer header", "curl -H 'Authorization: Bearer abc.def-ghi_123' x", "curl -H 'Authorization: Bearer ***' x"},
		{"basic header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"},
		{"random base64", "key=x Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo= end", "key=x *** end"},
		{"random hex", "token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "token ***"},
		{"aws secret key", "aws_secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret ***"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shapes(tc.in); got != tc.want {
				t.Errorf("Shapes(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestShapesLeaveOrdinaryText: words, identifiers, IDs, paths and options
// that only look a little like secrets stay.
func TestShapesLeaveOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"backend: dashboard login failed",
		"run 451bfcae-5922-4412-aa7f-5edc654b55a1 started",
		"open /tmp/TestLoginThrottle2206783869/001/data/relay.db: permission denied",
		"mkdir -p /tmp/x && find . -print0 | xargs -0 cp -pR",
		"ssh -p2222 host",
		"usage: input_tokens=20 output_tokens=10 max_tokens=5",
		"TestNotifierRetriesNetworkErrors internal/backend/approvals_stores_test.go",
		"GIT_AUTHOR_NAME=me git commit",
		"GITHUB_TOKEN_FILE=/run/secrets/gh",
		"http://127.0.0.1:8787/sessions/s1",
		"task-force sk-short the_quick_brown_fox_jumps_over_the_lazy_dog_2",
		"msg_01XFDUDYJgAACzvnptvVoYEL toolu_01A09q90qw90lq917835lq9",
		"Bearer <token>",
	} {
		if got := Shapes(s); got != s {
			t.Errorf("Shapes(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestTextSkipsShortSecrets: a configured secret shorter than
// MinSecretLen is not replaced (a token "a" once made every "backend"
// "b***ckend"); longer ones are, the longest first.
func TestTextSkipsShortSecrets(t *testing.T) {
	if got := Text("backend: a request", []string{"a", "back"}); got != "backend: a request" {
		t.Errorf("short secrets replaced: %q", got)
	}
	if got := Text("tok tok-3f9a-secret-long", []string{"tok-3f9a", "tok-3f9a-secret-long"}); got != "tok ***" {
		t.Errorf("got %q, want the longer secret replaced whole", got)
	}
	if got := Known("/t/x", []string{"/t"}); got != "***/x" {
		t.Errorf("Known skipped a short secret: %q", got)
	}
}

func TestHighEntropy(t *testing.T) {
	for _, tc := range []struct {
		w    string
		want bool
	}{
		{"0123456789abcdef0123456789abcdef", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", false},
		{"451bfcae-5922-4412-aa7f-5edc654b55a1", false},
		{"/home/user1/projects/someproject2/x", false},
		{"abcdefghijklmnopqrstuvwxyzabcdefgh", false}, // no digit
		{"Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl", true},
		{"short1A", false},
	} {
		if got := HighEntropy(tc.w); got != tc.want {
			t.Errorf("HighEntropy(%q) = %v, want %v", tc.w, got, tc.want)
		}
	}
}

// FuzzText: any text and secret: no panic, valid UTF-8 stays valid, a
// secret long enough (and without the mask's '*') never survives, and a
// GitHub token put anywhere between spaces is gone.
func FuzzText(f *testing.F) {
	f.Add("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz012345 mysql -pHunter2", "Hunter2-long")
	f.Add("postgres://u:p@h/db?password=x", "p@h/db?pa")
	f.Add(`{"token":"\"abc"}`, "")
	f.Add("Authorization: Bearer abcdefgh", "abcdefgh")
	f.Fuzz(func(t *testing.T, s, secret string) {
		out := Text(s, []string{secret})
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Text(%q) = %q: invalid UTF-8", s, out)
		}
		if len(secret) >= MinSecretLen && !strings.Contains(secret, "*") && strings.Contains(out, secret) {
			t.Fatalf("Text(%q, %q) = %q still has the secret", s, secret, out)
		}
		const gh = "ghp_0123456789abcdefghijABCDEFGHIJ"
		if out := Text(s+" "+gh+" "+s, nil); strings.Contains(out, gh) {
			t.Fatalf("a GitHub token survived in %q", out)
		}
	})
}

func TestNamedDigestsStay(t *testing.T) {
	d := "sha256:da56c6021255b1f7c15810b7ecd536becf378ba7c163f9cc02d0af137defa80b"
	in := "refused: made on an input (" + d + ") that is not the one asked about"
	if got := Shapes(in); got != in {
		t.Errorf("Shapes(%q) = %q: a named digest is no secret", in, got)
	}
	bare := "token da56c6021255b1f7c15810b7ecd536becf378ba7c163f9cc02d0af137defa80b here"
	if got := Shapes(bare); got == bare {
		t.Errorf("an unnamed 64-hex word stayed: %q", got)
	}
}
