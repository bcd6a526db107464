package markdown

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	if os.Getenv("AFTER") == "" {
		t.Skip()
	}
	n, _ := strconv.Atoi(os.Getenv("SIZE"))
	r := New()
	var names []string
	for k := range probes {
		names = append(names, k)
	}
	sort.Strings(names)
	if o := os.Getenv("ONLY"); o != "" {
		names = strings.Split(o, ",")
	}
	for _, name := range names {
		s := probes[name](n)
		start := time.Now()
		why := overBudget(s)
		scan := time.Since(start)
		out := r.Render(s)
		d := time.Since(start)
		var raw time.Duration
		if why != "" && os.Getenv("RAW") != "" {
			st := time.Now()
			r.render(s)
			raw = time.Since(st)
		}
		fmt.Printf("AFTER %-16s %7d scan=%-10v total=%-10v reason=%-18q out=%d raw=%v\n", name, len(s), scan.Round(time.Microsecond), d.Round(time.Millisecond), why, len(out), raw.Round(time.Millisecond))
	}
}
