package policy

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecide(t *testing.T) {
	const cwd, home = "/work/proj", "/home/u"
	in := func(kv ...string) json.RawMessage {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	bash := func(cmd string) Call { return Call{Tool: "Bash", Input: in("command", cmd), Cwd: cwd, Home: home} }
	file := func(tool, p string) Call {
		return Call{Tool: tool, Input: in("file_path", p), Cwd: cwd, Home: home}
	}
	fetch := func(u string) Call { return Call{Tool: "WebFetch", Input: in("url", u), Cwd: cwd} }
	tests := []struct {
		rule   string
		effect Effect
		call   Call
		want   bool
	}{
		// Bash: wildcard, with an optional trailing " *" and a word boundary.
		{"Bash(rm *)", Deny, bash("rm -rf build"), true},
		{"Bash(rm *)", Deny, bash("rm"), true},
		{"Bash(rm *)", Deny, bash("rmdir x"), false},
		{"Bash(rm*)", Deny, bash("rmdir x"), true},
		{"Bash(git push *)", Ask, bash("git push origin main"), true},
		{"Bash(git push *)", Ask, bash("git pushx"), false},
		{"Bash(git push *)", Ask, bash("git status"), false},
		{"Bash(git * main)", Ask, bash("git push origin main"), true},
		{"Bash(git * main)", Ask, bash("git push origin dev"), false},
		{"Bash(* --force)", Deny, bash("git push --force"), true},
		// Legacy prefix.
		{"Bash(npm run:*)", Allow, bash("npm run test"), true},
		{"Bash(npm run:*)", Allow, bash("npm run"), true},
		{"Bash(npm run:*)", Allow, bash("npm runx"), false},
		// Exact.
		{"Bash(npm test)", Allow, bash("npm test"), true},
		{"Bash(npm test)", Allow, bash("npm test --watch"), false},
		// Compound commands: deny sees every part, allow needs all of them.
		{"Bash(rm *)", Deny, bash("echo hi && rm -rf /"), true},
		{"Bash(rm *)", Deny, bash("ls; rm x"), true},
		{"Bash(rm *)", Deny, bash("echo $(rm x)"), true},
		{"Bash(rm *)", Deny, bash("echo 'a && rm x'"), false},
		{"Bash(echo *)", Allow, bash("echo hi && rm -rf /"), false},
		{"Bash(echo *)", Allow, bash("echo hi"), true},
		{"Bash(rm *)", Deny, Call{Tool: "Write", Input: in("file_path", "/work/proj/rm"), Cwd: cwd}, false},
		// Bare tools and Tool(*).
		{"Bash", Deny, bash("anything"), true},
		{"Bash(*)", Deny, bash("anything"), true},
		{"WebFetch", Deny, fetch("https://example.com"), true},
		{"Read", Deny, file("Read", "/etc/passwd"), true},
		// Paths: gitignore-style, anchored like the CLI's.
		{"Write(**/.env*)", Deny, file("Write", "/work/proj/.env"), true},
		{"Write(**/.env*)", Deny, file("Write", "/work/proj/app/.env.local"), true},
		{"Write(**/.env*)", Deny, file("Edit", "/work/proj/app/.env.local"), true},
		{"Write(**/.env*)", Deny, file("Write", "/work/proj/app/env"), false},
		{"Write(**/.env*)", Deny, file("Write", "/elsewhere/.env"), false},
		{"Edit(.env)", Deny, file("Write", "sub/.env"), true},
		{"Edit(/src/**/*.ts)", Deny, file("Edit", "/work/proj/src/a/b.ts"), true},
		{"Edit(/src/**/*.ts)", Deny, file("Edit", "/work/proj/src/b.ts"), true},
		{"Edit(/src/**/*.ts)", Deny, file("Edit", "/work/proj/lib/src/b.ts"), false},
		{"Edit(src/*.ts)", Deny, file("Edit", "/work/proj/src/a/b.ts"), false},
		{"Edit(//etc/**)", Deny, file("Write", "/etc/hosts"), true},
		{"Read(~/.ssh/**)", Deny, file("Read", "/home/u/.ssh/id_ed25519"), true},
		{"Read(~/.ssh/**)", Deny, file("Read", "/home/v/.ssh/id_ed25519"), false},
		{"Read(./secrets)", Deny, file("Read", "/work/proj/secrets/a/key"), true},
		{"Read(./secrets/**)", Deny, Call{Tool: "Grep", Input: in("pattern", "x", "path", "secrets"), Cwd: cwd}, true},
		{"Read(*.pem)", Deny, file("Read", "/work/proj/a/b/c.pem"), true},
		{"Read(*.pem)", Deny, file("Edit", "/work/proj/a/b/c.pem"), false},
		// WebFetch domains.
		{"WebFetch(domain:example.com)", Deny, fetch("https://example.com/x"), true},
		{"WebFetch(domain:example.com)", Deny, fetch("https://EXAMPLE.com./x"), true},
		{"WebFetch(domain:example.com)", Deny, fetch("https://api.example.com/x"), false},
		{"WebFetch(domain:*.example.com)", Deny, fetch("https://api.example.com/x"), true},
		{"WebFetch(domain:*)", Ask, fetch("https://anything.org"), true},
		// MCP.
		{"mcp__github__create_issue", Deny, Call{Tool: "mcp__github__create_issue"}, true},
		{"mcp__github__create_issue", Deny, Call{Tool: "mcp__github__list"}, false},
		{"mcp__github", Deny, Call{Tool: "mcp__github__list"}, true},
		{"mcp__github__*", Deny, Call{Tool: "mcp__github__list"}, true},
		{"mcp__github", Deny, Call{Tool: "mcp__githubx__list"}, false},
		// Other tools: their primary input.
		{"WebSearch(claude *)", Deny, Call{Tool: "WebSearch", Input: in("query", "claude code")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"/"+string(tt.call.Input), func(t *testing.T) {
			p, err := Compile([]Rule{{Rule: tt.rule, Effect: tt.effect}})
			if err != nil {
				t.Fatal(err)
			}
			if _, got := p.Decide(tt.call); got != tt.want {
				t.Errorf("%s on %s %s: got %v, want %v", tt.rule, tt.call.Tool, tt.call.Input, got, tt.want)
			}
		})
	}
}

func TestFirstMatchWins(t *testing.T) {
	p, err := Compile([]Rule{
		{Rule: "Bash(git push --force *)", Effect: Deny, Reason: "no force pushes"},
		{Rule: "Bash(git push *)", Effect: Ask, Approver: Dashboard},
		{Rule: "Bash", Effect: Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]int{"git push --force origin": 0, "git push origin": 1, "ls": 2} {
		m, ok := p.Decide(Call{Tool: "Bash", Input: json.RawMessage(`{"command":"` + cmd + `"}`)})
		if !ok || m.Index != want {
			t.Errorf("%q: got rule %d (%v), want %d", cmd, m.Index, ok, want)
		}
	}
	var nilPolicy *Policy
	if _, ok := nilPolicy.Decide(Call{Tool: "Bash"}); ok {
		t.Error("a nil policy matched")
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, r := range []Rule{
		{Rule: "Bash(rm *)", Effect: "block"},
		{Rule: "Bash(rm *", Effect: Deny},
		{Rule: "(rm)", Effect: Deny},
		{Rule: "Bash()", Effect: Deny},
		{Rule: "WebFetch(example.com)", Effect: Deny},
		{Rule: "mcp__a__b(x)", Effect: Deny},
		{Rule: "Bash", Effect: Deny, Approver: Dashboard},
		{Rule: "Bash", Effect: Ask, Approver: "phone"},
	} {
		if _, err := Compile([]Rule{r}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", r, err)
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add("Bash(git * main)", `{"command":"git push origin main && rm x"}`)
	f.Add("Write(**/.env*)", `{"file_path":"../.env"}`)
	f.Fuzz(func(t *testing.T, rule, input string) {
		p, err := Compile([]Rule{{Rule: rule, Effect: Deny}})
		if err != nil {
			return
		}
		p.Decide(Call{Tool: "Bash", Input: json.RawMessage(input), Cwd: "/w"})
		p.Decide(Call{Tool: "Write", Input: json.RawMessage(input), Cwd: "/w"})
	})
}
