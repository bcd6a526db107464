// Package dashboard is the reference backend's web UI: a live session list
// and a live session timeline, plain HTML, CSS and JavaScript embedded in the
// binary (no build step). The pages read the backend's JSON API and SSE
// streams with the login cookie; every piece of event content is inserted
// with textContent, never as HTML, except the assistant's Markdown, which
// the server renders and sanitises (internal/server/markdown) and the page checks
// again; a strict Content-Security-Policy forbids inline scripts and
// styles as a further line of defence.
//
// The package serves files and the login form only; authentication and the
// API are package backend's.
package dashboard

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed static
var static embed.FS

//go:embed login.html
var loginHTML string

// loginTmpl and notFoundTmpl are parsed on first use, like files: a
// process that links the dashboard but serves no page pays nothing.
var loginTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("login").Parse(loginHTML))
})

//go:embed notfound.html
var notFoundHTML string

var notFoundTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("notfound").Parse(notFoundHTML))
})

// csp allows only our own scripts, styles and connections.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one embedded asset, ready to serve.
type file struct {
	name  string
	data  []byte
	etag  string
	ctype string
}

// files are the embedded assets, hashed (for their ETags) on the first
// request that needs one, not at package init or Register.
var files = sync.OnceValue(loadFiles)

func loadFiles() map[string]*file {
	out := make(map[string]*file)
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[strings.TrimPrefix(p, "static/")] = &file{
			name:  path.Base(p),
			data:  data,
			etag:  `"` + hex.EncodeToString(sum[:8]) + `"`,
			ctype: contentType(p),
		}
		return nil
	})
	if err != nil {
		panic("dashboard: embedded files: " + err.Error())
	}
	return out
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Pages says what Register cannot know alone.
type Pages struct {
	// SessionExists reports whether a session is stored, so that a
	// mistyped or unknown ID gets the not-found page rather than an empty
	// live view. Nil: every session page is served. An error serves the
	// page (it says what the API answers).
	SessionExists func(r *http.Request, id string) (bool, error)
}

// Register adds the dashboard's routes to mux: GET / (session list),
// GET /sessions/{id} (a session's timeline), /cost, /approvals, GET
// /static/... (assets), and the not-found page for every other GET. The
// caller wraps mux with authentication.
func Register(mux *http.ServeMux, p Pages) {
	mux.HandleFunc("GET /{$}", servePage("index.html"))
	session := servePage("session.html")
	mux.HandleFunc("GET /sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if p.SessionExists != nil {
			if ok, err := p.SessionExists(r, id); err == nil && !ok {
				WriteNotFound(w, http.StatusNotFound, NotFound{Session: id, Query: id})
				return
			}
		}
		session(w, r)
	})
	mux.HandleFunc("GET /cost", servePage("cost.html"))
	mux.HandleFunc("GET /approvals", servePage("approvals.html"))
	mux.HandleFunc("GET /static/{name}", func(w http.ResponseWriter, r *http.Request) {
		f, ok := files()[r.PathValue("name")]
		if !ok || strings.HasSuffix(f.name, ".html") {
			http.NotFound(w, r)
			return
		}
		serveFile(w, r, f)
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		WriteNotFound(w, http.StatusNotFound, NotFound{Path: r.URL.Path})
	})
}

// NotFound fills the not-found page: a session ID that names no session,
// or a path with no page.
type NotFound struct {
	Session string // the unknown session's ID; "" for a path
	Path    string
	Query   string // the search box's text
}

// WriteNotFound writes the not-found page with status: what was not found,
// a search box and a way back to the list.
func WriteNotFound(w http.ResponseWriter, status int, data NotFound) {
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	var buf bytes.Buffer
	if err := notFoundTmpl().Execute(&buf, data); err != nil {
		http.Error(w, "not-found page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// servePage serves the embedded page name; that every page Register names
// is embedded is TestPagesEmbedded's job, since nothing is looked up before
// the first request.
func servePage(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f := files()[name]
		if f == nil {
			http.Error(w, "dashboard: no embedded page "+name, http.StatusInternalServerError)
			return
		}
		serveFile(w, r, f)
	}
}

func serveFile(w http.ResponseWriter, r *http.Request, f *file) {
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	// Revalidate every time: the files change with the binary, and a 304 is
	// cheap on loopback.
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.data))
}

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// LoginData fills the token form.
type LoginData struct {
	Error    string // shown above the form
	Next     string // where to go after logging in (a local path)
	Disabled bool   // no token is configured: explain instead of asking
	// TokenFile is where the generated default token is kept, named so a
	// user knows where to find one. Only the path: the page never shows a
	// token. Empty: no such file is accepted, so the page names none.
	TokenFile string
}

// WriteLogin writes the token form with status. The page carries its own
// style under a per-response nonce, so it needs no authenticated asset.
func WriteLogin(w http.ResponseWriter, status int, data LoginData) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Security-Policy", "default-src 'none'; img-src data:; style-src 'nonce-"+nonce+"'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	var buf bytes.Buffer
	err := loginTmpl().Execute(&buf, struct {
		LoginData
		Nonce string
	}{data, nonce})
	if err != nil {
		http.Error(w, "login page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
