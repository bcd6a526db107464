package localbackend

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/claude-relay/claude-relay/config"
)

// Files in the data dir that tie `serve` and the embedded default together.
const (
	TokenFile = "serve.token" // the generated token both accept (ingest, read: people log in with it)
	// HelperTokenFile is the generated token the data dir's helpers post
	// with: ingest and decisions only, so it reads no session and decides
	// nothing (tokens.Helper).
	HelperTokenFile = "helper.token"
	InfoFile        = "serve.json" // where the data dir's serve listens
	LockFile        = "serve.lock" // flocked by the data dir's one serve; holds its pid
)

// TokenPath is where dataDir's generated token lives.
func TokenPath(dataDir string) string { return filepath.Join(dataDir, TokenFile) }

// HelperTokenPath is where dataDir's generated helper token lives.
func HelperTokenPath(dataDir string) string { return filepath.Join(dataDir, HelperTokenFile) }

// Token returns dataDir's generated token, creating it (0600) if it is
// missing or empty.
func Token(dataDir string) (config.Secret, error) { return tokenAt(TokenPath(dataDir)) }

// HelperToken returns dataDir's generated helper token, creating it (0600)
// if it is missing or empty.
func HelperToken(dataDir string) (config.Secret, error) { return tokenAt(HelperTokenPath(dataDir)) }

// tokenAt reads the token at path, creating it if missing or empty. The
// file appears whole (written aside, then linked into place), so a helper
// starting at the same moment never reads half a token.
func tokenAt(path string) (config.Secret, error) {
	for range 20 {
		if b, err := os.ReadFile(path); err == nil {
			if tok := strings.TrimSpace(string(b)); tok != "" {
				return config.Secret(tok), nil
			}
			os.Remove(path) // an empty file (a crash mid-write before this scheme): start over
		}
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return "", fmt.Errorf("generate a backend token: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", fmt.Errorf("data dir: %w", err)
		}
		tmp, err := writeTemp(path, []byte(hex.EncodeToString(raw)+"\n"))
		if err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		err = os.Link(tmp, path) // fails if another helper won: then read theirs
		os.Remove(tmp)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
	}
	return "", fmt.Errorf("cannot create a usable token in %s", path)
}

// writeTemp writes b to a new 0600 file beside path, named uniquely so that
// callers racing in one process (not only across processes) never share it.
func writeTemp(path string, b []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
