package harden

import "errors"

// ErrUnsupported: this platform has no dumpable flag we set.
var ErrUnsupported = errors.New("harden: not supported on this platform")
