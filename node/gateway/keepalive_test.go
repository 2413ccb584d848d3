package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/interact"
)

// aLongTimeAgo is the read deadline net/http sets to end its own
// background read of a connection (net/http.aLongTimeAgo).
var aLongTimeAgo = time.Unix(1, 0)

// deadlineConn is a server-side connection that records the read
// deadlines set on it while a read is in flight. net/http's server, with
// no timeouts configured, sets only the zero deadline and aLongTimeAgo;
// any other deadline set during a read was set by a handler.
type deadlineConn struct {
	net.Conn

	mu      sync.Mutex
	reading int
	foreign []time.Time
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.reading++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.reading--
		c.mu.Unlock()
	}()
	return c.Conn.Read(p)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	if c.reading > 0 && !t.IsZero() && !t.Equal(aLongTimeAgo) {
		c.foreign = append(c.foreign, t)
	}
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

type deadlineListener struct {
	net.Listener

	mu    sync.Mutex
	conns []*deadlineConn
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, dc)
	l.mu.Unlock()
	return dc, nil
}

func (l *deadlineListener) foreign() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, c := range l.conns {
		c.mu.Lock()
		out = append(out, c.foreign...)
		c.mu.Unlock()
	}
	return out
}

// viaRouter reaches every Thing through the node's router.
type viaRouter struct{ inv interact.Invoker }

func (v viaRouter) For(peer.ID) interact.Invoker { return v.inv }

// A streaming invocation whose body has ended leaves its kept-alive
// connection usable. Once a request body has ended, net/http reads the
// connection in the background to notice a consumer that leaves; a read
// deadline set by the handler then ends that read as if the consumer had
// left, and cancels the context of every later request on the
// connection. The gateway used to set one at the end of every streaming
// invocation, and a later read on the connection sometimes answered 503
// "context canceled" (or an invocation an empty 200), depending on which
// of the server's goroutines came first; the deadline itself is what the
// test looks for, so it fails every time the deadline is set.
func TestStreamingKeepsConnectionUsable(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	id := testnet.UniqueID(t)
	if _, err := n.Register(deviceTD(t, id), device()); err != nil {
		t.Fatal(err)
	}
	h, err := gateway.New(gateway.Deps{Resolver: n.Things(), Invokers: viaRouter{n.Invoker()}}, gateway.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl := &deadlineListener{Listener: ln}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(dl) }()
	defer srv.Close()

	// One connection, kept alive across the requests.
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	base := "http://" + ln.Addr().String() + thingPath(id)
	call := func(method, path, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, bufio.NewReader(resp.Body)); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, strings.TrimSpace(b.String())
	}

	for i := range 10 {
		// The whole body is sent: it has ended before the session does.
		// add is an ordinary action (the session falls back to one
		// invocation), shout a stream.
		if code, body := call(http.MethodPost, "/actions/add", "application/x-ndjson", `{"a": 1, "b": 2}`+"\n"); code != http.StatusOK || !strings.Contains(body, "event: completed\ndata: 3") {
			t.Fatalf("round %d: add as a session: %d %q", i, code, body)
		}
		if code, body := call(http.MethodPost, "/actions/shout", "application/x-ndjson", "\"a\"\n\"b\"\n"); code != http.StatusOK || !strings.Contains(body, "event: completed") {
			t.Fatalf("round %d: shout: %d %q", i, code, body)
		}
		if code, body := call(http.MethodGet, "/properties/model", "", ""); code != http.StatusOK || body != `"T-1000"` {
			t.Fatalf("round %d: read after the sessions: %d %q", i, code, body)
		}
		if code, body := call(http.MethodPost, "/actions/add", "application/json", `{"a": 2, "b": 2}`); code != http.StatusOK || body != "4" {
			t.Fatalf("round %d: invoke after the sessions: %d %q", i, code, body)
		}
	}
	if f := dl.foreign(); len(f) > 0 {
		t.Errorf("the handler set %d read deadlines while net/http read the connection in the background (first %s)", len(f), f[0].Format(time.RFC3339Nano))
	}
	dl.mu.Lock()
	conns := len(dl.conns)
	dl.mu.Unlock()
	if conns != 1 {
		t.Errorf("%d connections, want 1 kept alive", conns)
	}
}
