package terminal

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// A visible run's cost is the CLI's own figure: the interactive CLI keeps a
// running total per conversation and writes it when it exits (CLI 2.1.330):
//
//   - into the transcript, as a "cost-state" line: sessionId, totalCostUSD,
//     startTime and modelUsage (per model: tokens and costUSD), twice at
//     exit; latest wins;
//   - into its config file ($CLAUDE_CONFIG_DIR/.claude.json, else
//     $HOME/.claude.json), under projects[<project dir>]: lastSessionId,
//     lastCost, lastStartTime, lastModelUsage, … for the last conversation
//     that exited in that project only.
//
// A resumed conversation (--resume, --continue) and a fork (--resume
// --fork-session) start from the totals of the conversation they continue
// (the transcript's last cost-state), startTime included, so the run's own
// cost is the total at exit minus the total before the run.

// costRecord is one of the CLI's running totals.
type costRecord struct {
	SessionID string
	StartTime int64 // ms; carried over with the totals by a resume
	TotalUSD  float64
	Models    map[string]float64 // cost by model
}

// cliModelCost is a modelUsage entry's cost.
type cliModelCost struct {
	CostUSD float64 `json:"costUSD"`
}

// costStateOf reads a transcript's cost-state line.
func costStateOf(b []byte) (costRecord, bool) {
	var c struct {
		Type       string                  `json:"type"`
		SessionID  string                  `json:"sessionId"`
		Total      *float64                `json:"totalCostUSD"`
		StartTime  float64                 `json:"startTime"`
		ModelUsage map[string]cliModelCost `json:"modelUsage"`
	}
	if json.Unmarshal(b, &c) != nil || c.Type != "cost-state" || c.Total == nil {
		return costRecord{}, false
	}
	return newCostRecord(c.SessionID, c.StartTime, *c.Total, c.ModelUsage), true
}

func newCostRecord(session string, start, total float64, models map[string]cliModelCost) costRecord {
	r := costRecord{SessionID: session, StartTime: int64(start), TotalUSD: total, Models: map[string]float64{}}
	for m, u := range models {
		if m != "" && u.CostUSD > 0 {
			r.Models[m] = u.CostUSD
		}
	}
	return r
}

// since is the cost added after base: c minus base when c carries base's
// totals over (the same startTime, or without one, no less spent), c
// itself otherwise.
func (c costRecord) since(base *costRecord) costRecord {
	if base == nil || !c.carries(*base) {
		return c
	}
	out := costRecord{SessionID: c.SessionID, StartTime: c.StartTime, TotalUSD: dollars(c.TotalUSD - base.TotalUSD), Models: map[string]float64{}}
	for m, v := range c.Models {
		if d := dollars(v - base.Models[m]); d > 0 {
			out.Models[m] = d
		}
	}
	return out
}

func (c costRecord) carries(base costRecord) bool {
	if c.StartTime != 0 && base.StartTime != 0 {
		return c.StartTime == base.StartTime
	}
	return c.TotalUSD >= base.TotalUSD
}

// dollars drops the float noise of a difference (a picodollar) and
// anything below zero.
func dollars(v float64) float64 {
	return max(math.Round(v*1e12)/1e12, 0)
}

// claudePaths are where the CLI keeps its state in env: its directory
// (transcripts under projects/) and its config file.
func claudePaths(env []string) (dir, config string) {
	var home, configDir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			configDir = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if configDir != "" {
		return configDir, filepath.Join(configDir, ".claude.json")
	}
	return filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")
}

// configCosts reads the config file's per-project totals, by the
// conversation they are of (lastSessionId); nil when there are none.
func configCosts(path string) map[string]costRecord {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var cfg struct {
		Projects map[string]struct {
			SessionID  string                  `json:"lastSessionId"`
			Cost       *float64                `json:"lastCost"`
			StartTime  float64                 `json:"lastStartTime"`
			ModelUsage map[string]cliModelCost `json:"lastModelUsage"`
		} `json:"projects"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return nil
	}
	out := map[string]costRecord{}
	for _, p := range cfg.Projects {
		if p.SessionID != "" && p.Cost != nil {
			out[p.SessionID] = newCostRecord(p.SessionID, p.StartTime, *p.Cost, p.ModelUsage)
		}
	}
	return out
}

// readHistory reads the first limit bytes of a transcript: what it held
// before this run. It returns the last cost-state there (where a resume's
// totals start) and, with copies, the uuids of its lines, which a fork's
// new transcript repeats.
func readHistory(path string, limit int64, copies bool) (last *costRecord, uuids set) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	eachLine(io.LimitReader(f, limit), 16<<20, func(line []byte) {
		if rec, ok := costStateOf(line); ok {
			last = &rec
			return
		}
		var l struct {
			UUID string `json:"uuid"`
		}
		if copies && json.Unmarshal(line, &l) == nil && l.UUID != "" {
			uuids.add(l.UUID)
		}
	})
	return last, uuids
}

// eachLine calls fn with every line of r (without the newline) up to
// maxLine bytes; longer lines are skipped.
func eachLine(r io.Reader, maxLine int, fn func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping && len(long)+len(chunk) <= maxLine {
				long = append(long, chunk...)
			} else {
				skipping, long = true, long[:0]
			}
			continue
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
		}
		if line = trimNewline(line); !skipping && len(line) > 0 {
			fn(line)
		}
		long, skipping = long[:0], false
		if err != nil {
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
