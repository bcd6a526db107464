package markdown

import (
	"bytes"
	"testing"
)

// unbudgeted is Render as it was before the budget: goldmark and the
// sanitizer, nothing checked first. Benchmarks only.
func (r *Renderer) unbudgeted(text string) string {
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(text), &buf); err != nil {
		return plain(text)
	}
	return r.policy.Sanitize(buf.String())
}

// benchInputs are some of the budget's pathological inputs at 32 KiB, or
// 4 KiB for the table (unbudgeted, goldmark builds half a million cells
// for that), and ordinary text. They are small because the baseline is
// quadratic: at MaxInput it takes seconds to tens of seconds per input.
func benchInputs() []struct{ name, text string } {
	want := map[string]int{
		"block quotes >>>": 32 << 10, "nested lists - - -": 32 << 10, "unclosed links [a](": 32 << 10,
		"emphasis *a_": 32 << 10, "nested brackets": 32 << 10, "wide table": 4 << 10,
	}
	var in []struct{ name, text string }
	for _, c := range pathological {
		if n, ok := want[c.name]; ok {
			in = append(in, struct{ name, text string }{c.name, c.text(n)})
		}
	}
	return append(in, struct{ name, text string }{"ordinary", ordinary(32 << 10)})
}

// BenchmarkRender renders each input; BenchmarkRenderBaseline is the same
// without the budget, measured in the same run (make bench prints the
// ratio).
func BenchmarkRender(b *testing.B) {
	r := New()
	for _, c := range benchInputs() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				r.Render(c.text)
			}
		})
	}
}

func BenchmarkRenderBaseline(b *testing.B) {
	r := New()
	for _, c := range benchInputs() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				r.unbudgeted(c.text)
			}
		})
	}
}

// BenchmarkOverBudget is the pre-scan alone on ordinary text at MaxInput:
// what the budget costs every render.
func BenchmarkOverBudget(b *testing.B) {
	text := ordinary(MaxInput - 2000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if why := overBudget(text); why != "" {
			b.Fatal(why)
		}
	}
}
