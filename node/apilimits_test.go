package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
)

// waitAPIConns waits until n's API holds want connections.
func waitAPIConns(t *testing.T, n *node.Node, want int) {
	t.Helper()
	testnet.WaitFor(t, fmt.Sprintf("%d open API connections", want), 10*time.Second, func() (bool, string) {
		return n.APIOpenConns() == want, fmt.Sprintf("%d open", n.APIOpenConns())
	})
}

// TestAPILimits runs the attacks of issue 14 (slow bodies, a 2 MB header,
// a 50 MB body on the groups routes, more connections than the cap)
// against a node, and checks that an event stream outlives the body
// deadline.
func TestAPILimits(t *testing.T) {
	const perClient = 30
	const bodyTimeout = 300 * time.Millisecond
	tn := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *node.Config) {
		cfg.APILimits = node.APILimits{BodyTimeout: node.Duration(bodyTimeout), MaxConnsPerClient: perClient, LimitLoopback: true}
	}})
	n := tn.Nodes[0]
	addr := n.APIAddr()
	base := "http://" + addr
	http.DefaultClient.CloseIdleConnections()

	t.Run("slow bodies are cut", func(t *testing.T) {
		// Each route that reads a body: the directory, the groups and an
		// action of the HTTP binding.
		routes := []string{"POST /things", "PUT /things/urn:x:slow", "POST /api/v1/groups", "POST /things/urn:x:slow/actions/a"}
		const perRoute = 5
		var conns []net.Conn
		for _, route := range routes {
			method, path, _ := strings.Cut(route, " ")
			for range perRoute {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"na", method, path, addr, n.APIToken())
				if _, err := io.WriteString(c, head); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
		}
		// All cut off: the server holds none of them.
		waitAPIConns(t, n, 0)
		for i, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 4") {
				t.Fatalf("%s: %q, %v; want a 4xx answer", routes[i/perRoute], got, err)
			}
			if routes[i/perRoute] == "POST /api/v1/groups" && !strings.HasPrefix(string(got), "HTTP/1.1 408 ") {
				t.Fatalf("%s: %q; want 408", routes[i/perRoute], got)
			}
		}
	})

	t.Run("2 MB header", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/node", nil)
		req.Header.Set("X-Big", strings.Repeat("h", 2<<20))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", resp.StatusCode)
		}
	})

	for _, tc := range []struct {
		name   string
		length int64
	}{{"50 MB declared", 50 << 20}, {"9 MB chunked", -1}} {
		t.Run("groups "+tc.name, func(t *testing.T) {
			size := tc.length
			if size < 0 {
				size = 9 << 20
			}
			req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/groups", bytes.NewReader(make([]byte, size)))
			req.ContentLength = tc.length
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+n.APIToken())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			p, err := httpapi.ResponseProblem(resp, body)
			if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, %s, %v; want a 413 problem", resp.StatusCode, body, err)
			}
		})
	}

	t.Run("connections per client", func(t *testing.T) {
		http.DefaultClient.CloseIdleConnections()
		waitAPIConns(t, n, 0)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for range perClient + 1 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		last := held[perClient]
		_ = last.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := last.Read(make([]byte, 1)); err == nil || isNetTimeout(err) {
			t.Fatalf("connection %d: read %v, want it closed", perClient+1, err)
		}
		waitAPIConns(t, n, perClient)
	})

	t.Run("event stream outlives the body deadline", func(t *testing.T) {
		waitAPIConns(t, n, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		time.Sleep(3 * bodyTimeout)
		id := testnet.UniqueID(t)
		if _, err := n.Register(testnet.TD(t, id, "Late", "late"), interact.NewThing()); err != nil {
			t.Fatal(err)
		}
		for ev, err := range httpapi.ReadEvents(resp.Body, 1<<20) {
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if strings.Contains(ev.Data, id) {
				return
			}
		}
		t.Fatalf("stream ended before the event of %s", id)
	})
}

func isNetTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
