//go:build linux

package proc

import (
	"errors"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 777 100 200"
	tests := []struct {
		name string
		in   string
		want stat
		err  bool
	}{
		{"plain", "42 (sleep) S 1 42" + tail, stat{'S', 1, 42, 777}, false},
		{"spaces and parens in comm", "42 (a) b (c) Z 7 8" + tail, stat{'Z', 7, 8, 777}, false},
		{"empty comm", "42 () R 3 4" + tail, stat{'R', 3, 4, 777}, false},
		{"no paren", "42 sleep S 1 42" + tail, stat{}, true},
		{"truncated", "42 (sleep) S 1 42 0 0", stat{}, true},
		{"bad ppid", "42 (sleep) S x 42" + tail, stat{}, true},
		{"bad state", "42 (sleep) SS 1 42" + tail, stat{}, true},
		{"empty", "", stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("parseStat = %+v, %v; want %+v, error %v", got, err, tt.want, tt.err)
			}
			if err != nil && !errors.Is(err, errBadStat) {
				t.Errorf("error %v is not errBadStat", err)
			}
		})
	}
}

func TestHasEnvEntry(t *testing.T) {
	const entry = "CLAUDE_RELAY_RUN=r1"
	tests := []struct {
		env  string
		want bool
	}{
		{"A=1\x00CLAUDE_RELAY_RUN=r1\x00B=2\x00", true},
		{"CLAUDE_RELAY_RUN=r1", true},
		{"CLAUDE_RELAY_RUN=r1\x00", true},
		{"CLAUDE_RELAY_RUN=r12\x00", false},
		{"XCLAUDE_RELAY_RUN=r1\x00", false},
		{"CLAUDE_RELAY_RUN=r\x00", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hasEnvEntry([]byte(tt.env), entry); got != tt.want {
			t.Errorf("hasEnvEntry(%q) = %v, want %v", tt.env, got, tt.want)
		}
	}
	if hasEnvEntry([]byte("\x00\x00"), "") {
		t.Error("empty entry matched")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 1 42 42 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 252822 3133440 384"))
	f.Add([]byte("1 ((x)) ) Z 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err != nil && s != (stat{}) {
			t.Errorf("error %v with non-zero result %+v", err, s)
		}
	})
}

func FuzzFileName(f *testing.F) {
	f.Add("3f2a-B_c.d")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, runID string) {
		name, err := fileName(runID)
		if err != nil {
			return
		}
		for _, c := range name[:len(name)-len(recordExt)] {
			if c == '/' || c == 0 {
				t.Fatalf("fileName(%q) = %q", runID, name)
			}
		}
		if name[0] == '.' {
			t.Fatalf("fileName(%q) = %q is hidden", runID, name)
		}
	})
}
