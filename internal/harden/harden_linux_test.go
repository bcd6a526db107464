package harden

import "testing"

func TestNoDump(t *testing.T) {
	before, err := Dumpable()
	if err != nil || !before {
		t.Fatalf("a test process starts dumpable: %v %v", before, err)
	}
	if err := NoDump(); err != nil {
		t.Fatal(err)
	}
	if after, err := Dumpable(); err != nil || after {
		t.Fatalf("after NoDump: dumpable %v, %v", after, err)
	}
}
