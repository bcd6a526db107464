package executor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/google/uuid"

	"github.com/claude-relay/claude-relay/internal/streamjson"
)

// errPeerClosed reports a write after stdin was closed.
var errPeerClosed = errors.New("CLI stdin closed")

// peer is our side of the control protocol: serialised writes to the CLI's
// stdin and correlation of our control requests with their responses.
type peer struct {
	mu      sync.Mutex // serialises writes: a line must never interleave
	w       io.WriteCloser
	closed  bool
	pending map[string]answerFunc
}

// answerFunc receives the CLI's response to one of our control requests, or
// (resp nil) the error that means none will come. It runs on the stdout
// reader's goroutine and must not block.
type answerFunc func(resp *streamjson.ControlResponse, err error)

func newPeer(w io.WriteCloser) *peer {
	return &peer{w: w, pending: map[string]answerFunc{}}
}

// writeLine writes one NDJSON line. A dead CLI makes stdin writes fail with
// EPIPE; that is expected, not an error worth more than a debug line.
func (p *peer) writeLine(line []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errPeerClosed
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := p.w.Write(buf); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
			return fmt.Errorf("%w: %w", errPeerClosed, err)
		}
		return fmt.Errorf("write to CLI stdin: %w", err)
	}
	return nil
}

// send writes a control request and returns a channel for its response.
func (p *peer) send(req any) (string, <-chan *streamjson.ControlResponse, error) {
	ch := make(chan *streamjson.ControlResponse, 1)
	id, err := p.call(req, func(resp *streamjson.ControlResponse, _ error) {
		if resp != nil {
			ch <- resp
		}
	})
	return id, ch, err
}

// call writes a control request; answer gets its response, or the error of
// abandon if the run ends first. A request that cannot be written is
// forgotten and answer is not called: the error is returned instead.
func (p *peer) call(req any, answer answerFunc) (string, error) {
	id := uuid.NewString()
	line, err := streamjson.ControlRequest{RequestID: id, Request: req}.Encode()
	if err != nil {
		return "", fmt.Errorf("encode control request: %w", err)
	}
	p.mu.Lock()
	p.pending[id] = answer
	p.mu.Unlock()
	if err := p.writeLine(line); err != nil {
		p.forget(id)
		return "", err
	}
	return id, nil
}

// resolve hands a control_response to whoever waits for it.
func (p *peer) resolve(resp *streamjson.ControlResponse) bool {
	p.mu.Lock()
	answer, ok := p.pending[resp.RequestID]
	delete(p.pending, resp.RequestID)
	p.mu.Unlock()
	if ok {
		answer(resp, nil)
	}
	return ok
}

// abandon tells every request still waiting that no response will come.
// Call it once the stdout reader has ended.
func (p *peer) abandon(err error) {
	p.mu.Lock()
	pending := p.pending
	p.pending = map[string]answerFunc{}
	p.mu.Unlock()
	for _, answer := range pending {
		answer(nil, err)
	}
}

func (p *peer) forget(id string) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

func (p *peer) respond(requestID string, response any) error {
	line, err := streamjson.ControlResponseSuccess(requestID, response)
	if err != nil {
		return fmt.Errorf("encode control response: %w", err)
	}
	return p.writeLine(line)
}

func (p *peer) respondError(requestID, msg string) error {
	return p.writeLine(streamjson.ControlResponseError(requestID, msg))
}

// close closes stdin once; the CLI ends after its result when it sees EOF.
func (p *peer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.w.Close()
	}
}
