//go:build !unix

package fsutil

// Lock is a no-op where flock(2) is missing: the module does not build
// there anyway (see the README); this keeps the package compiling.
func Lock(string, bool) (func(), error) { return func() {}, nil }
