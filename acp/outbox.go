package acp

import "sync"

// outbox runs a session's work in order on one goroutine: every update
// translated and written, permission requests started, prompt answers
// given, in the order the run's events came. The run's events arrive on
// the CLI's reader goroutines, which must never wait for the client.
type outbox struct {
	mu     sync.Mutex
	q      []func()
	wake   chan struct{}
	held   bool // nothing runs until release: a new session's updates wait for session/new's answer
	closed bool
	done   chan struct{}
}

// newOutbox starts an outbox, held until release when held is set.
func newOutbox(held bool) *outbox {
	o := &outbox{wake: make(chan struct{}, 1), done: make(chan struct{}), held: held}
	go o.loop()
	return o
}

// release lets a held outbox run.
func (o *outbox) release() {
	o.mu.Lock()
	o.held = false
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push queues f; after close it is dropped.
func (o *outbox) push(f func()) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.q = append(o.q, f)
	o.mu.Unlock()
	o.signal()
}

// close runs what is queued, then stops the loop; it waits for that.
func (o *outbox) close() {
	o.mu.Lock()
	already := o.closed
	o.closed = true
	o.held = false
	o.mu.Unlock()
	if !already {
		o.signal()
	}
	<-o.done
}

func (o *outbox) loop() {
	defer close(o.done)
	for range o.wake {
		for {
			o.mu.Lock()
			if o.held && !o.closed {
				o.mu.Unlock()
				break
			}
			if len(o.q) == 0 {
				closed := o.closed
				o.mu.Unlock()
				if closed {
					return
				}
				break
			}
			f := o.q[0]
			o.q[0] = nil
			o.q = o.q[1:]
			o.mu.Unlock()
			f()
		}
	}
}
