package forwarder

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// producerEnv makes the test binary a producer process for the crash test:
// TestMain calls runProducer instead of running the tests.
const producerEnv = "CLAUDE_RELAY_TEST_PRODUCER"

// producerConfig is what the crash test hands its producer, as JSON in
// producerEnv.
type producerConfig struct {
	Dir          string   `json:"dir"`
	URL          string   `json:"url"`
	Sessions     []string `json:"sessions"`
	Interactions []string `json:"interactions"`
	Seed         uint64   `json:"seed"`
	FirstPad     int      `json:"first_pad"` // bytes of padding in the first session's first event
}

// producerLifetime bounds a producer the parent somehow failed to kill.
const producerLifetime = time.Minute

// runProducer opens a Forwarder on the configured spool (it delivers to the
// test's backend meanwhile) and enqueues events for ever, one goroutine per
// session, printing "event_id seq session interaction" after each accepted
// event with one write(2). The parent SIGKILLs it; it also exits when its
// stdin closes, so a dead parent leaves no producer behind.
func runProducer() {
	var cfg producerConfig
	if err := json.Unmarshal([]byte(os.Getenv(producerEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "producer: bad config:", err)
		os.Exit(2)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	time.AfterFunc(producerLifetime, func() { os.Exit(4) })
	f, err := Open(producerOpts(cfg.Dir, cfg.URL))
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer: open:", err)
		os.Exit(2)
	}
	f.Start()
	var out sync.Mutex
	for i, sess := range cfg.Sessions {
		go func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			for n := 0; ; n++ {
				ev := producerEvent(rng, firstPad(cfg, i), sess, cfg.Interactions[rng.IntN(len(cfg.Interactions))], n)
				acc, err := f.Enqueue(ev)
				if err != nil {
					fmt.Fprintln(os.Stderr, "producer: enqueue:", err)
					os.Exit(2)
				}
				line := fmt.Sprintf("%s %d %s %s\n", acc.EventID, acc.Seq, ev.SessionID, ev.InteractionID)
				out.Lock()
				_, err = os.Stdout.WriteString(line) // unbuffered: one write(2)
				out.Unlock()
				if err != nil {
					os.Exit(3)
				}
				time.Sleep(time.Millisecond) // a few thousand events per producer, not millions
			}
		}()
	}
	select {}
}

func firstPad(cfg producerConfig, session int) int {
	if session == 0 {
		return cfg.FirstPad
	}
	return 0
}

// producerOpts are fastOpts with an attempt timeout long enough for a
// race-instrumented backend to take a batch of large events.
func producerOpts(dir, url string) Options {
	o := fastOpts(dir, url)
	o.AttemptTimeout = 10 * time.Second
	return o
}

// producerEvent pads events to 0.1–4 KB, or to firstPad bytes if set for
// the first event: a few of those make a spool roll its segment (8 MiB), so
// that recovery must use the seq snapshot, at less cost under -race than
// many middling events.
func producerEvent(rng *rand.Rand, firstPad int, session, interaction string, n int) Event {
	pad := 100 + rng.IntN(4<<10)
	if n == 0 && firstPad > 0 {
		pad = firstPad
	}
	data := `{"type":"assistant","n":` + strconv.Itoa(n) + `,"pad":"` + strings.Repeat("p", pad) + `"}`
	return Event{SessionID: session, InteractionID: interaction, Type: "assistant", Source: "agent",
		Data: json.RawMessage(data)}
}
