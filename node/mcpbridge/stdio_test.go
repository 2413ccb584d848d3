package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAnswers(t *testing.T) {
	cases := []struct {
		msg, id string
		want    bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, `3`, true},
		{`{"jsonrpc":"2.0","id": "a","error":{"code":1,"message":"x"}}`, `"a"`, true},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, `4`, false},
		{`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, `3`, false}, // a request of the server
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, `3`, false},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, ``, false}, // a notification has no answer
		{`not json`, `3`, false},
	}
	for _, c := range cases {
		if got := answers([]byte(c.msg), json.RawMessage(c.id)); got != c.want {
			t.Errorf("answers(%s, %s) = %v, want %v", c.msg, c.id, got, c.want)
		}
	}
}

// restartingEndpoint is a Streamable HTTP endpoint that restarts: its
// sessions end, and the first initialize after that fails, as a node
// still starting answers.
type restartingEndpoint struct {
	mu        sync.Mutex
	session   string
	n         int
	failInits int
	streams   []chan struct{}
}

func (e *restartingEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	current := e.session
	e.mu.Unlock()
	got := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodPost:
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		if m.Method == "initialize" {
			e.mu.Lock()
			if e.failInits > 0 {
				e.failInits--
				e.mu.Unlock()
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
			e.n++
			e.session = fmt.Sprintf("s%d", e.n)
			w.Header().Set("Mcp-Session-Id", e.session)
			e.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"f","version":"0"}}}`, m.ID)
			return
		}
		if got != current {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	case got == "":
		http.Error(w, "no session", http.StatusBadRequest)
	case got != current:
		http.Error(w, "no such session", http.StatusNotFound)
	default:
		end := make(chan struct{})
		e.mu.Lock()
		e.streams = append(e.streams, end)
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-end:
		case <-r.Context().Done():
		}
	}
}

// restart ends every session and stream; the next initialize fails.
func (e *restartingEndpoint) restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.session, e.failInits = "gone", 1
	for _, end := range e.streams {
		close(end)
	}
	e.streams = nil
}

// TestBridgeResumesAfterAFailedResume: the node restarts and answers the
// bridge's first initialize with an error (it is still starting); the
// bridge tries again, opens a new session and tells the host
// list_changed. (It used to wait on a GET without a session, which the
// endpoint refuses with 400, for ever.)
func TestBridgeResumesAfterAFailedResume(t *testing.T) {
	e := &restartingEndpoint{}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	bridgeIn, next := runBridge(t, srv)
	fmt.Fprintln(bridgeIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if l := next("the initialize answer"); !strings.Contains(l, `"id":1`) {
		t.Fatalf("first line %s, want the initialize answer", l)
	}
	fmt.Fprintln(bridgeIn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	waitStreams := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			e.mu.Lock()
			n := len(e.streams)
			e.mu.Unlock()
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the bridge opened no GET stream")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitStreams()
	e.restart()
	if l := next("list_changed after the restart"); !strings.Contains(l, "notifications/tools/list_changed") {
		t.Fatalf("after the restart: %s, want list_changed", l)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != "s2" {
		t.Fatalf("session %q after the restart, want s2", e.session)
	}
}

// runBridge runs a Bridge to the endpoint srv until the test ends. It
// returns the host's side: what the host writes to the bridge, and the
// bridge's next line (the test fails if none comes in 20 s).
func runBridge(t *testing.T, srv *httptest.Server) (io.Writer, func(what string) string) {
	t.Helper()
	hostIn, bridgeIn := io.Pipe()
	bridgeOut, hostOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Bridge(ctx, func() (string, error) { return srv.URL, nil }, srv.Client(), hostIn, hostOut)
	}()
	t.Cleanup(func() {
		cancel()
		_ = bridgeIn.Close()
		_ = bridgeOut.Close()
		if err := <-done; err != nil {
			t.Logf("bridge: %v", err)
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(bridgeOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return bridgeIn, func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: the bridge's output ended", what)
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: nothing from the bridge in 20 s", what)
		}
		return ""
	}
}

// TestBridgeHoldsAListen: a host that speaks 2026-07-28 listens for
// tools/list_changed; the node restarts, and ends the listen gracefully
// on its way down (the listen's result, as the specification asks of a
// server that shuts down). The host does not see that result: the
// bridge, its server, did not end the subscription. It listens on the
// node that came back, and tells the host list_changed. (The host's
// listen used to end there, and it heard of no change again.)
func TestBridgeHoldsAListen(t *testing.T) {
	e := &listenEndpoint{end: make(chan struct{})}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	bridgeIn, next := runBridge(t, srv)
	fmt.Fprintln(bridgeIn, `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},`+
		`"io.modelcontextprotocol/clientCapabilities":{}},`+
		`"notifications":{"toolsListChanged":true}}}`)
	if l := next("the acknowledgement"); !strings.Contains(l, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first line %s, want the acknowledgement", l)
	}
	close(e.end)
	for {
		l := next("list_changed after the restart")
		if answers([]byte(l), json.RawMessage("7")) {
			t.Fatalf("the host got the end of its listen: %s", l)
		}
		if strings.Contains(l, "notifications/tools/list_changed") {
			break
		}
	}
	if n := e.listens.Load(); n != 2 {
		t.Fatalf("%d listens reached the node, want 2", n)
	}
}

// listenEndpoint answers subscriptions/listen as a 2026-07-28 node does:
// the acknowledgement, then nothing until the request ends, or, for the
// listens opened before end is closed, the listen's result when it is
// (the node shuts down).
type listenEndpoint struct {
	end     chan struct{}
	listens atomic.Int32
}

func (e *listenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		http.Error(w, "listen only", http.StatusBadRequest)
		return
	}
	e.listens.Add(1)
	ending := e.end
	select {
	case <-e.end:
		ending = nil // opened after the restart: held
	default:
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s},\"notifications\":{\"toolsListChanged\":true}}}\n\n", req.ID)
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-ending:
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s}}}\n\n", req.ID, req.ID)
	}
}
