package localbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// StartWait is how long a command waits for a serve that holds the data dir
// but does not answer yet (it is opening its database or about to listen)
// before it gives up on it and starts the embedded default.
const StartWait = 5 * time.Second

// Info is serve.json: where a running serve of the data dir listens.
type Info struct {
	URL     string    `json:"url"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// Probe is what Find saw.
type Probe struct {
	Held  bool // a serve holds the data dir's lock
	PID   int  // the holder's pid from serve.lock (0 while it writes it)
	Info  Info // serve.json, when it is the holder's
	Ready bool // Info is the holder's and it answers /healthz
}

// Find looks for the serve holding dir's lock, at the address its
// serve.json gives, waiting up to wait for one that is still starting.
//
// A free lock means no serve, whatever serve.json says, and serve.json
// counts only when it names the pid the holder wrote into serve.lock, so a
// serve that has taken the lock but not yet advertised is waited for, not
// mistaken for the dead one before it.
func Find(ctx context.Context, dir string, wait time.Duration) Probe {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var p Probe
		if p.PID, p.Held = lockHolder(dir); !p.Held {
			return p
		}
		if info, err := ReadInfo(dir); err == nil && p.PID != 0 && info.PID == p.PID {
			p.Info = info
			if p.Ready = answers(ctx, info.URL); p.Ready {
				return p
			}
		}
		select {
		case <-ctx.Done():
			return p
		case <-tick.C:
		}
	}
}

// ReadInfo reads dir's serve.json, whoever wrote it (Find checks that it is
// the lock holder's). It is replaced whole (renamed into place), so a reader
// never sees half of one.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", InfoFile, err)
	}
	if info.URL == "" || info.PID <= 0 {
		return info, fmt.Errorf("%s: no url or pid", InfoFile)
	}
	return info, nil
}

// answers says whether url's /healthz says OK within a short time.
func answers(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// LocalURL is how a process on this machine reaches a listener, for
// Advertise: a wildcard address (":8788", "0.0.0.0:8788", "[::]:8788") is
// reached on 127.0.0.1 (Go's wildcard listeners are dual-stack).
func LocalURL(addr net.Addr) string {
	t, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := t.IP.String()
	if t.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(t.Port))
}
