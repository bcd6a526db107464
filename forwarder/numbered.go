package forwarder

// Numbered reports whether this process holds the spool that Enqueue uses
// for sessionID and that spool has numbered events of interactionID already,
// so an event enqueued for them now continues that numbering.
//
// An interaction never spans processes, except when a helper died during a
// run and another process ends the run for it: that process must check this
// first, because in a spool it does not hold (another live process has it,
// or it is a sibling spool) the interaction's seq would start again at 1.
func (f *Forwarder) Numbered(sessionID, interactionID string) bool {
	f.mu.Lock()
	s := f.sessions[sessionID]
	f.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seqs[interactionID] > 0
}
