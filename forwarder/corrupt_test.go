package forwarder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// frame is where one record sits in a segment file.
type frame struct{ start, end int64 }

// segmentFrames lists the records of a clean segment file.
func segmentFrames(t *testing.T, path string) []frame {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newSegmentReader(bytes.NewReader(b), 0, int64(len(b)))
	var out []frame
	for start := int64(0); ; {
		_, end, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || r.corrupt > 0 {
			t.Fatalf("segment not clean before the damage: %v %v", err, r.lastErr)
		}
		out = append(out, frame{start, end})
		start = end
	}
	return out
}

func downSink(t *testing.T) *sink {
	sk := newSink(t)
	sk.fault = func(_ int64, w http.ResponseWriter, _ *http.Request) (bool, bool) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true, false
	}
	return sk
}

// checks fails a case. It once also routed failures explained by known
// bugs (a trusted corrupt length; uncounted tail bytes) to skips; both are
// fixed, so every failure fails.
type knownBugs struct {
	t *testing.T
}

func (k *knownBugs) errorf(_ string, format string, args ...any) {
	k.t.Helper()
	k.t.Errorf(format, args...)
}

func (k *knownBugs) finish() {}

// TestCorruptSpoolIsReportedAndSkipped damages a spool left by a forwarder
// whose backend was down, then reopens it with a healthy backend: the damage
// is reported as corrupt_spool, every intact record is delivered in order
// (the reader resyncs on the magic after bad bytes), nothing loops, and new
// events continue the numbering.
func TestCorruptSpoolIsReportedAndSkipped(t *testing.T) {
	const n = 20
	cases := []struct {
		name   string
		damage func(t *testing.T, path string, fr []frame)
		lost   []int64 // seqs that cannot survive the damage
		bug    string  // a known bug this case shows
	}{{
		name: "torn tail",
		damage: func(t *testing.T, path string, fr []frame) {
			if err := os.Truncate(path, fr[n-1].end-5); err != nil {
				t.Fatal(err)
			}
		},
		// The last record is torn; recovery numbers from the intact ones,
		// so the next event takes its seq and the stream stays gap-free.
		lost: []int64{n},
	}, {
		name: "flipped payload byte",
		damage: func(t *testing.T, path string, fr []frame) {
			mid := fr[n/2]
			flipByte(t, path, (mid.start+headerSize+mid.end)/2)
		},
		lost: []int64{n/2 + 1},
	}, {
		name: "flipped length byte",
		damage: func(t *testing.T, path string, fr []frame) {
			flipByte(t, path, fr[n/2].start+4) // low byte of the length: lands inside the next record
		},
		lost: []int64{n/2 + 1},
	}, {
		name: "length grown into the next record",
		damage: func(t *testing.T, path string, fr []frame) {
			addLength(t, path, fr[n/2].start, fr[n/2+1].end-fr[n/2].end-headerSize/2)
		},
		lost: []int64{n/2 + 1},
	}, {
		name: "length grown past the end",
		damage: func(t *testing.T, path string, fr []frame) {
			addLength(t, path, fr[n/2].start, 1<<20)
		},
		lost: []int64{n/2 + 1},
	}, {
		name: "garbage appended",
		damage: func(t *testing.T, path string, _ []frame) {
			fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if _, err := fh.Write(bytes.Repeat([]byte("\x00garbage\xff"), 50)); err != nil {
				t.Fatal(err)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := Open(fastOpts(dir, downSink(t).srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			f.Start()
			for i := range n {
				if _, err := f.Enqueue(event("s", "i", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Stop(ctxTimeout(t, 50*time.Millisecond)); !errors.Is(err, ErrUndelivered) {
				t.Fatalf("stop with the backend down: %v", err)
			}
			seg := filepath.Join(dir, "sessions", "s", segName(1))
			fr := segmentFrames(t, seg)
			if len(fr) != n {
				t.Fatalf("%d records in the segment, want %d", len(fr), n)
			}
			tc.damage(t, seg, fr)
			k := &knownBugs{t: t}

			up := newSink(t)
			var mu sync.Mutex
			var corrupt []Error
			opts := fastOpts(dir, up.srv.URL)
			opts.OnError = func(e Error) {
				if e.Code == CodeCorruptSpool {
					mu.Lock()
					corrupt = append(corrupt, e)
					mu.Unlock()
				}
			}
			f, err = Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			f.Start()
			var want []int64
			for q := int64(1); q <= n; q++ {
				if !slices.Contains(tc.lost, q) {
					want = append(want, q)
				}
			}
			last := want[len(want)-1]
			for i := range 3 {
				acc, err := f.Enqueue(event("s", "i", n+i))
				if err != nil {
					t.Fatal(err)
				}
				if last++; acc.Seq != last {
					k.errorf("", "enqueue after reopening got seq %d, want %d", acc.Seq, last)
				}
				want = append(want, last)
			}
			if err := f.Stop(ctxTimeout(t, 10*time.Second)); err != nil {
				k.errorf("", "stop after delivering everything: %v", err)
			}
			if got := up.committed()["s"]; !slices.Equal(got, want) {
				k.errorf("", "committed seqs\n %v\nwant\n %v", got, want)
			}
			if a := up.attempts.Load(); a > int64(len(want)) {
				k.errorf("", "%d requests for %d events: the corrupt stretch was retried", a, len(want))
			}
			mu.Lock()
			reports := slices.Clone(corrupt)
			mu.Unlock()
			if len(reports) == 0 || len(reports) > 4 {
				k.errorf("", "corrupt_spool reported %d times, want 1–4: %+v", len(reports), reports)
			}
			for _, e := range reports {
				if e.SessionID != "s" || e.Message == "" {
					k.errorf("", "corrupt_spool report %+v", e)
				}
			}
			if st := f.Stats(); st.SpoolBytes != 0 {
				k.errorf("", "stats after delivering everything: %+v", st)
			}
			k.finish()
		})
	}
}

// addLength adds d to the length field of the record at off.
func addLength(t *testing.T, path string, off, d int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var b [4]byte
	if _, err := fh.ReadAt(b[:], off+4); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[:], binary.LittleEndian.Uint32(b[:])+uint32(d))
	if _, err := fh.WriteAt(b[:], off+4); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var b [1]byte
	if _, err := fh.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x80
	if _, err := fh.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}
