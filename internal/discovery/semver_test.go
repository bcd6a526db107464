package discovery

import "testing"

func TestExtractVersion(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"2.1.330 (Claude Code)", "2.1.330", true},
		{"v1.2.3\n", "1.2.3", true},
		{"claude 1.0.0-beta.2+exp.sha.5114f85 (x)", "1.0.0-beta.2+exp.sha.5114f85", true},
		{"1.2.3-", "1.2.3", true},
		{"1.2.3-rc.", "1.2.3-rc", true},
		{"node v20.1 then 3.4.5 and 6.7.8", "3.4.5", true},
		{"10.20.30.40", "10.20.30", true},
		{"no version here", "", false},
		{"1.2", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ExtractVersion(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ExtractVersion(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	// Ascending, from the semver 2.0.0 spec §11 plus numeric edge cases.
	ordered := []string{
		"not-a-version",
		"0.9.99",
		"1.0.0-alpha",
		"1.0.0-alpha.1",
		"1.0.0-alpha.beta",
		"1.0.0-beta",
		"1.0.0-beta.2",
		"1.0.0-beta.11",
		"1.0.0-rc.1",
		"1.0.0",
		"1.0.1",
		"1.2.0",
		"1.10.0",
		"2.1.9",
		"2.1.330",
		"99999999999999999999.0.0",
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := CompareVersions(ordered[i], ordered[j]); got != want {
				t.Errorf("CompareVersions(%q, %q) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}

	equal := [][2]string{
		{"1.0.0+build.1", "1.0.0+build.2"},
		{"1.0.0-rc.1+a", "1.0.0-rc.1"},
		{"v1.2.3", "1.2.3"},
		{"01.002.3", "1.2.3"},
		{"junk", "other junk"},
	}
	for _, p := range equal {
		if got := CompareVersions(p[0], p[1]); got != 0 {
			t.Errorf("CompareVersions(%q, %q) = %d, want 0", p[0], p[1], got)
		}
	}
}

func FuzzExtractVersion(f *testing.F) {
	for _, s := range []string{"2.1.330 (Claude Code)", "v1.0.0-rc.1+b", "1.2", "x9.9.9-a.b.c-d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ExtractVersion(s)
		if !ok {
			return
		}
		if again, ok := ExtractVersion(v); !ok || again != v {
			t.Fatalf("ExtractVersion(%q) = %q, not stable: %q %v", s, v, again, ok)
		}
		if _, ok := parseVersion(v); !ok {
			t.Fatalf("extracted %q does not parse", v)
		}
		if CompareVersions(v, v) != 0 {
			t.Fatalf("%q != itself", v)
		}
	})
}

func FuzzCompareVersions(f *testing.F) {
	f.Add("1.0.0-alpha", "1.0.0")
	f.Add("1.0.0-1", "1.0.0-a")
	f.Add("junk", "0.0.0")
	f.Fuzz(func(t *testing.T, a, b string) {
		if x, y := CompareVersions(a, b), CompareVersions(b, a); x != -y {
			t.Fatalf("not antisymmetric: (%q,%q)=%d, reversed=%d", a, b, x, y)
		}
	})
}
