//go:build unix

package terminal

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSettings(t *testing.T) {
	const url = "http://127.0.0.1:1234/hook/abc"
	const exe = "/opt/claude relay/bin/claude-relay"
	b, err := Settings(url, exe, false)
	if err != nil {
		t.Fatal(err)
	}
	var s fakeSettings
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("settings are not JSON: %v\n%s", err, b)
	}
	var got []string
	for ev := range s.Hooks {
		got = append(got, ev)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(HookEvents))
	if !slices.Equal(got, want) {
		t.Errorf("hooks for %v, want every one of %v", got, want)
	}
	for _, ev := range HookEvents {
		entries := s.Hooks[ev]
		if len(entries) != 1 || len(entries[0].Hooks) != 1 {
			t.Errorf("%s: %+v, want one entry with one hook", ev, entries)
			continue
		}
		wantMatcher := ""
		if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PostToolUseFailure" {
			wantMatcher = "*"
		}
		if entries[0].Matcher != wantMatcher {
			t.Errorf("%s matcher %q, want %q", ev, entries[0].Matcher, wantMatcher)
		}
		h := entries[0].Hooks[0]
		if h.Timeout <= 0 {
			t.Errorf("%s hook without a timeout", ev)
		}
		switch {
		case httpHookEvents[ev]:
			if h.Type != "http" || h.URL != url || h.Command != "" {
				t.Errorf("%s hook %+v, want http to %s", ev, h, url)
			}
		default:
			if wantCmd := shellQuote(exe) + " hook-post " + shellQuote(url); h.Type != "command" || h.Command != wantCmd {
				t.Errorf("%s hook %+v, want command %s", ev, h, wantCmd)
			}
		}
	}
}

// The command hook must reach the helper with exactly two arguments whatever
// the paths hold: run it through sh as the CLI does.
func TestSettingsCommandQuoting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `it's "a" dir $(touch pwned) `+"`x`")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "args")
	exe := filepath.Join(dir, "claude relay")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + shellQuote(out) + "\n"
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	const url = "http://127.0.0.1:1/hook/it's;$HOME"
	b, err := Settings(url, exe, false)
	if err != nil {
		t.Fatal(err)
	}
	var s fakeSettings
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", s.Hooks["SessionStart"][0].Hooks[0].Command)
	cmd.Dir = t.TempDir()
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run the command hook: %v\n%s", err, o)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hook-post\n" + url + "\n"; string(got) != want {
		t.Errorf("the helper got arguments %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(cmd.Dir, "pwned")); err == nil {
		t.Error("a command substitution in the path ran")
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "two words", "it's", "''", `a\b`, "$HOME", "a\nb", "*"} {
		out, err := exec.Command("sh", "-c", "printf '%s' "+shellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if string(out) != s {
			t.Errorf("shellQuote(%q) reads back as %q", s, out)
		}
		if !strings.HasPrefix(shellQuote(s), "'") {
			t.Errorf("shellQuote(%q) = %s, want single-quoted", s, shellQuote(s))
		}
	}
}

// With a policy, PreToolUse asks it through the fail-closed command hook.
func TestSettingsPolicyHook(t *testing.T) {
	const url, exe = "http://127.0.0.1:1234/hook/abc", "/opt/claude-relay"
	b, err := Settings(url, exe, true)
	if err != nil {
		t.Fatal(err)
	}
	var s fakeSettings
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	h := s.Hooks["PreToolUse"][0].Hooks[0]
	if want := shellQuote(exe) + " hook-policy " + shellQuote(url); h.Type != "command" || h.Command != want || h.Timeout != PolicyHookTimeout {
		t.Errorf("PreToolUse hook %+v, want command %s with timeout %d", h, want, PolicyHookTimeout)
	}
	if m := s.Hooks["PreToolUse"][0].Matcher; m != "*" {
		t.Errorf("PreToolUse matcher %q, want every tool", m)
	}
}
