package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/claude-relay/claude-relay/config"
	"github.com/claude-relay/claude-relay/forwarder"
	"github.com/claude-relay/claude-relay/internal/server/backend"
	"github.com/claude-relay/claude-relay/internal/server/backend/memstore"
)

// backendScriptCmds are the scripts' backends and spool fixtures:
//
//	webserver NAME                 a server answering nginx's welcome page, 200, to everything; $NAME is its URL
//	relaybackend NAME TOKEN        the reference backend (in memory) taking TOKEN; $NAME is its URL
//	stored NAME SESSION N          the relaybackend NAME holds exactly N events of SESSION
//	spooled DIR URL SESSION N [DEST]
//	                               leave N events of SESSION in the spool DIR, spooled for URL (or the
//	                               destination DEST, such as local:DATADIR) while URL was down
var backendScriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"webserver":    cmdWebServer,
	"relaybackend": cmdRelayBackend,
	"stored":       cmdStored,
	"spooled":      cmdSpooled,
}

// scriptStores are the relaybackends' stores by script and name.
var scriptStores sync.Map // *testscript.TestScript + name -> *memstore.Store

type storeKey struct {
	ts   *testscript.TestScript
	name string
}

func cmdWebServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: webserver NAME")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><h1>Welcome to nginx!</h1></body></html>\n")
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

func cmdRelayBackend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: relaybackend NAME TOKEN")
	}
	st := memstore.New()
	tok := config.Secret(args[1])
	be := backend.New(backend.Options{Store: st, Tokens: func() []config.Secret { return []config.Secret{tok} }})
	srv := httptest.NewServer(be.Handler())
	ts.Defer(func() {
		scriptStores.Delete(storeKey{ts, args[0]})
		srv.Close()
		be.Shutdown(context.Background()) //nolint:errcheck
		st.Close()
	})
	scriptStores.Store(storeKey{ts, args[0]}, st)
	ts.Setenv(args[0], srv.URL)
}

func cmdStored(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: stored NAME SESSION N")
	}
	v, ok := scriptStores.Load(storeKey{ts, args[0]})
	if !ok {
		ts.Fatalf("stored: no relaybackend %s", args[0])
	}
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	evs, err := v.(*memstore.Store).Events(context.Background(), args[1], 0, 100000)
	ts.Check(err)
	if got := len(evs); (got == want) == neg {
		ts.Fatalf("backend %s holds %d events of %s; want %s%d", args[0], got, args[1], map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

func cmdSpooled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 || len(args) > 5 {
		ts.Fatalf("usage: spooled DIR URL SESSION N [DEST]")
	}
	n, err := strconv.Atoi(args[3])
	ts.Check(err)
	opts := forwarder.Options{Dir: ts.MkAbs(args[0]), BackendURL: args[1], MaxBackoff: 10 * time.Millisecond}
	if len(args) == 5 {
		opts.Destination = args[4]
	}
	f, err := forwarder.Open(opts)
	ts.Check(err)
	for i := range n {
		_, err := f.Enqueue(forwarder.Event{SessionID: args[2], InteractionID: "spooled", Type: "assistant", Source: "agent",
			Data: json.RawMessage(`{"type":"assistant","n":` + strconv.Itoa(i) + `}`)})
		ts.Check(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f.Stop(ctx) //nolint:errcheck // left in the spool on purpose
}
