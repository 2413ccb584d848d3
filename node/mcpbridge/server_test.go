package mcpbridge

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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

// TestToolsBounded: of the learned Things, at most MaxThings have tools:
// those learned first while there is room, then those find_things
// returned, the one found least recently losing its tools first; an MCP
// client lists exactly those.
func TestToolsBounded(t *testing.T) {
	s := newTestServer(t, Config{MaxThings: 2})
	raw, err := os.ReadFile("../../examples/things/weather-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	base, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pub, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"Alpha", "Bravo", "Charlie", "Delta"}
	for i, name := range names {
		td := base.Clone()
		td.ID, td.Title, td.Seq = fmt.Sprintf("urn:w%d", i), name+" weather", 1
		rec, err := lmosproto.SignThing(td, key, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.deps.Directory.Put(rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	// offered lists, by Thing, whether the client's tools/list has its
	// tools, and checks that it has no others.
	offered := func() []bool {
		t.Helper()
		listed := map[string]bool{}
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			listed[tool.Name] = true
		}
		var out []bool
		for i := range names {
			tools := s.ToolNames(pub, fmt.Sprintf("urn:w%d", i))
			for _, n := range tools {
				if !listed[n] {
					t.Errorf("urn:w%d: tool %s not listed", i, n)
				}
				delete(listed, n)
			}
			out = append(out, len(tools) > 0)
		}
		delete(listed, FindThings)
		delete(listed, ReadProperty)
		if len(listed) > 0 {
			t.Errorf("tools of no Thing offered: %v", listed)
		}
		return out
	}
	if got := offered(); !slices.Equal(got, []bool{true, true, false, false}) {
		t.Fatalf("at the start: %v, want the first two by id", got)
	}
	for _, tc := range []struct {
		text string
		want []bool
	}{
		{"delta", []bool{false, true, false, true}},   // w0 found least recently
		{"bravo", []bool{false, true, false, true}},   // offered already: found again
		{"charlie", []bool{false, true, true, false}}, // w3 found before w1
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: FindThings, Arguments: map[string]any{"text": tc.text}})
		if err != nil || res.IsError {
			t.Fatalf("find %s: %v %+v", tc.text, err, res)
		}
		var out FindOutput
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || len(out.Things) != 1 || len(out.Things[0].Tools) == 0 {
			t.Fatalf("find %s: %s, want one Thing with its tools", tc.text, b)
		}
		if got := offered(); !slices.Equal(got, tc.want) {
			t.Errorf("after finding %s: %v, want %v", tc.text, got, tc.want)
		}
	}
	// A Thing learned now finds no room: what was found keeps its tools.
	td := base.Clone()
	td.ID, td.Title, td.Seq = "urn:w4", "Echo weather", 1
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.deps.Directory.Put(rec, nil); err != nil {
		t.Fatal(err)
	}
	s.update(thingKey{pub, td.ID}) // as its event does
	if got, tools := offered(), s.ToolNames(pub, td.ID); !slices.Equal(got, []bool{false, true, true, false}) || len(tools) > 0 {
		t.Errorf("after learning a fifth: %v, its tools %v; want the found ones kept, none", got, tools)
	}
}
