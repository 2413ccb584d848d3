package mcpbridge

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestCloseEndsListens: Close ends a 2026-07-28 subscriptions/listen in
// flight, and one that reaches the endpoint after it. The second is the
// late end of a race seen in CI (TestMCPStdioNodeRestart): a listen whose
// session the SDK closed before its handler registered it waited for its
// client, and the node's Close with it, until the client went away.
func TestCloseEndsListens(t *testing.T) {
	s := newTestServer(t, Config{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	first, acked := listen(t, srv.URL)
	if !acked {
		t.Fatal("the listen was not acknowledged")
	}
	closed := make(chan struct{})
	go func() {
		_ = s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while a listen was open")
	}
	if _, err := io.Copy(io.Discard, first); err != nil {
		t.Fatalf("the open listen: %v", err)
	}

	late, _ := listen(t, srv.URL)
	if _, err := io.Copy(io.Discard, late); err != nil {
		t.Fatalf("a listen after Close stayed open: %v", err)
	}
}

// TestCacheHints: a result is fresh for a tenth of the time since the
// tools last changed, at most CacheTTL, and private.
func TestCacheHints(t *testing.T) {
	s := newTestServer(t, Config{CacheTTL: 10 * time.Second})
	hints := func() mcp.Cacheable {
		var c mcp.Cacheable
		s.cacheHints(context.Background(), nil, &c)
		return c
	}
	// Just started: the fixed tools were added a moment ago.
	if c := hints(); c.TTLMs >= 1000 || c.CacheScope != "private" {
		t.Errorf("just after a change: ttlMs %d, cacheScope %q; want under 1000, private", c.TTLMs, c.CacheScope)
	}
	s.changedAt.Store(time.Now().Add(-20 * time.Second).UnixNano())
	if c := hints(); c.TTLMs < 2000 || c.TTLMs >= 10_000 {
		t.Errorf("20 s after a change: ttlMs %d, want from 2000, under 10000", c.TTLMs)
	}
	s.changedAt.Store(time.Now().Add(-time.Hour).UnixNano())
	if c := hints(); c.TTLMs != 10_000 {
		t.Errorf("an hour after a change: ttlMs %d, want CacheTTL (10000)", c.TTLMs)
	}
}

// listen opens a subscriptions/listen to tools/list_changed on the
// endpoint at url and returns the rest of its stream once the
// acknowledgement came (acked), or what is left when the stream ended
// without one. The stream fails after 20 s.
func listen(t *testing.T, url string) (rest io.Reader, acked bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"toolsListChanged":true}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", RevisionStateless)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, "notifications/subscriptions/acknowledged") {
			return r, true
		}
		if errors.Is(err, io.EOF) {
			return r, false
		}
		if err != nil {
			t.Fatalf("the listen: %v", err)
		}
	}
}

func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	self, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	s, err := New(Deps{Directory: dir, Self: self, Resolver: noThings{}, Invokers: noThings{}, Visible: func(directory.Entry) bool { return true }}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// noThings resolves and calls nothing.
type noThings struct{}

func (noThings) Resolve(context.Context, string, peer.ID, bool) (directory.Entry, error) {
	return directory.Entry{}, errors.New("no Things here")
}

func (noThings) For(peer.ID) interact.Invoker { return nil }

// TestPendingBounded: while no session is open, the changes owed Thing by
// Thing stop at maxPending; past it a whole refresh is owed, and a
// change while one is owed adds nothing.
func TestPendingBounded(t *testing.T) {
	s := newTestServer(t, Config{})
	s.flush() // the refresh owed from the start
	owed := func() (int, bool) {
		s.pmu.Lock()
		defer s.pmu.Unlock()
		return len(s.pending), s.resync
	}
	pub := peer.ID("publisher")
	for i := range maxPending {
		s.changed(thingKey{pub, fmt.Sprintf("urn:t%d", i)})
	}
	if n, resync := owed(); n != maxPending || resync {
		t.Fatalf("after %d changes: %d pending, resync %v; want %d, false", maxPending, n, resync, maxPending)
	}
	s.changed(thingKey{pub, "urn:one-more"})
	if n, resync := owed(); n != 0 || !resync {
		t.Fatalf("past the bound: %d pending, resync %v; want 0, true", n, resync)
	}
	s.changed(thingKey{pub, "urn:another"})
	if n, resync := owed(); n != 0 || !resync {
		t.Errorf("with a refresh owed: %d pending, resync %v; want 0, true", n, resync)
	}
}
