// Command benchtab runs the repository's benchmarks and prints one table.
// A row Benchmark<Group>/<variant> is compared with its baseline measured in
// the same run: Benchmark<Group>Baseline/<variant> when that exists, else
// Benchmark<Group>/baseline. Ratios hold on a noisy machine where absolute
// times do not.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

type row struct {
	group, variant string
	metrics        map[string]float64
	units          []string
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func main() {
	bench := flag.String("bench", ".", "benchmark pattern")
	benchtime := flag.String("benchtime", "", "go test -benchtime")
	pkgs := flag.String("pkgs", "./...", "packages")
	flag.Parse()
	args := []string{"test", "-run", "^$", "-bench", *bench, "-benchmem", "-count", "1"}
	if *benchtime != "" {
		args = append(args, "-benchtime", *benchtime)
	}
	args = append(args, strings.Fields(*pkgs)...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	rows := parse(io.TeeReader(out, os.Stderr))
	if err := cmd.Wait(); err != nil {
		fail(fmt.Errorf("go test -bench: %w", err))
	}
	print(os.Stdout, rows)
}

func parse(r io.Reader) []row {
	var rows []row
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		group, variant, _ := strings.Cut(name, "/")
		r := row{group: group, variant: variant, metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r.metrics[f[i+1]] = v
			r.units = append(r.units, f[i+1])
		}
		rows = append(rows, r)
	}
	return rows
}

func print(w io.Writer, rows []row) {
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.group+"/"+r.variant] = r
	}
	baseline := func(r row) (row, bool) {
		if b, ok := byName[r.group+"Baseline/"+r.variant]; ok {
			return b, true
		}
		b, ok := byName[r.group+"/baseline"]
		return b, ok && r.variant != "baseline"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tvariant\tns/op\tB/op\tallocs/op\tvs baseline\tother figures\t")
	for _, r := range rows {
		ratio := "-"
		if b, ok := baseline(r); ok && b.metrics["ns/op"] > 0 {
			ratio = fmt.Sprintf("%.2fx", r.metrics["ns/op"]/b.metrics["ns/op"])
		}
		var other []string
		for _, u := range r.units {
			if u != "ns/op" && u != "B/op" && u != "allocs/op" {
				other = append(other, fmt.Sprintf("%s %s", num(r.metrics[u]), u))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.group, r.variant, num(r.metrics["ns/op"]),
			num(r.metrics["B/op"]), num(r.metrics["allocs/op"]), ratio, strings.Join(other, ", "))
	}
	tw.Flush()
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtab:", err)
	os.Exit(1)
}
