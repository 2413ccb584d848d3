package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// advPeerInteractions is the suite's resources.maxPeerInteractions: low,
// so that one raw peer reaches it within the test.
const advPeerInteractions = 40

// advHangBackend is the HTTP service of node 0's Thing with the action
// "hang", which answers nothing until its request is cancelled; it counts
// the requests it holds.
type advHangBackend struct {
	*httptest.Server
	open    atomic.Int64
	started chan struct{}
}

// hangPrepare publishes, on node 0, a Thing whose action "hang" never
// answers, and waits until node 1 knows it.
func (s *advSuite) hangPrepare(t *testing.T) {
	hb := &advHangBackend{started: make(chan struct{}, 4096)}
	hb.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hb.open.Add(1)
		defer hb.open.Add(-1)
		hb.started <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(hb.Close)
	s.hang, s.hangID = hb, testnet.UniqueID(t)
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  s.hangID,
		"title":               "Hangs",
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"actions":             map[string]any{"hang": map[string]any{"forms": []any{map[string]any{"href": "https://hang.invalid/hang"}}}},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	obsPublish(t, s.nodes[0], td, hb.URL)
	s.everyNodeHolds(t, "the hanging Thing", s.nodes[0], s.hangID)
}

// awaitStarted waits until n more backend requests have started.
func (hb *advHangBackend) awaitStarted(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for range n {
		select {
		case <-hb.started:
		case <-timeout:
			t.Fatalf("%d backend requests open, want %d more to start", hb.open.Load(), n)
		}
	}
}

// awaitOpen waits up to 2 s for the backend to hold want requests.
func (hb *advHangBackend) awaitOpen(t *testing.T, want int64, why string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for hb.open.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d backend requests open 2 s later, want %d", why, hb.open.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leavers: a raw peer starts, three times, as many invocations of the
// hanging action on node 0 as it may (resources.maxPeerInteractions) over
// /lmos/interact/1.0.0 and 1.1.0, has one more refused, then closes its
// streams; meanwhile HTTP consumers and a WebSocket consumer of node 1
// call the same action and leave. Every backend request ends within 2 s of its caller leaving, the
// one over the cap is a 429 error message while node 1 is still served,
// and the goroutines return to where they were.
func (s *advSuite) leavers(t *testing.T) advCount {
	owner, consumer := s.nodes[0], s.nodes[1]
	hb := s.hang
	baseline := runtime.NumGoroutine()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Connect(t.Context(), peer.AddrInfo{ID: owner.PeerID(), Addrs: owner.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	call := func(p string) network.Stream {
		req := lmosproto.NewMessage(s.hangID, lmosproto.MsgInvokeAction) // a correlationID of its own
		req.Name = "hang"
		payload, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		str, err := h.NewStream(t.Context(), owner.PeerID(), protocol.ID(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := lmosproto.WriteFrame(str, payload); err != nil {
			t.Fatal(err)
		}
		return str
	}
	c := advCount{how: " (every call cancelled at the backend within 2 s of its caller leaving; over the cap: 429)"}
	for burst := range 3 {
		var strs []network.Stream
		for i := range advPeerInteractions {
			p := lmosproto.ProtocolInteract
			if i%2 == 1 {
				p = lmosproto.ProtocolInteractSession
			}
			strs = append(strs, call(p))
		}
		hb.awaitStarted(t, len(strs))

		// one more: refused with the documented error
		over := call(lmosproto.ProtocolInteract)
		_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
		frame, err := lmosproto.ReadFrame(over, 0)
		var m lmosproto.Message
		if err == nil {
			err = json.Unmarshal(frame, &m)
		}
		switch {
		case err != nil:
			t.Errorf("burst %d: call over the cap: %v", burst, err)
		case m.Type != lmosproto.MsgError || m.Status != "429" || m.Title != interact.TitleTooManyRequests:
			t.Errorf("burst %d: call over the cap answered %s %s %q, want error 429 %q", burst, m.Type, m.Status, m.Title, interact.TitleTooManyRequests)
		default:
			c.refused++
		}
		_ = over.Close()
		c.tries += len(strs) + 1

		// node 1, another peer, is still served; its HTTP consumers leave
		// too
		const consumers = 10
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		for range consumers {
			wg.Go(func() {
				r, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://%s/things/%s/actions/hang", consumer.APIAddr(), s.hangID), nil)
				if err != nil {
					t.Error(err)
					return
				}
				r.Header.Set("Authorization", "Bearer "+consumer.APIToken())
				if resp, err := http.DefaultClient.Do(r); err == nil {
					resp.Body.Close()
					t.Errorf("a call of the hanging action was answered: %s", resp.Status)
				}
			})
		}
		hb.awaitStarted(t, consumers)
		c.tries += consumers

		for _, str := range strs {
			_ = str.Close()
		}
		hb.awaitOpen(t, consumers, "the raw peer closed its streams")
		c.refused += len(strs)
		cancel()
		wg.Wait()
		hb.awaitOpen(t, 0, "node 1's HTTP consumers left")
		c.refused += consumers

		// and a WebSocket consumer of node 1 that leaves
		ws, _, err := websocket.Dial(t.Context(), "ws://"+consumer.APIAddr()+"/ws", &websocket.DialOptions{
			Subprotocols: []string{lmosproto.WebSocketSubprotocol},
			HTTPHeader:   http.Header{"Authorization": {"Bearer " + consumer.APIToken()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for range consumers {
			m := lmosproto.NewMessage(s.hangID, lmosproto.MsgInvokeAction)
			m.Name = "hang"
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := ws.Write(t.Context(), websocket.MessageText, data); err != nil {
				t.Fatal(err)
			}
		}
		hb.awaitStarted(t, consumers)
		c.tries += consumers
		_ = ws.CloseNow()
		hb.awaitOpen(t, 0, "node 1's WebSocket consumer left")
		c.refused += consumers
	}
	_ = h.Close()
	http.DefaultClient.CloseIdleConnections()
	testnet.WaitFor(t, "goroutines back near where they were", waitLong, func() (bool, string) {
		g := runtime.NumGoroutine()
		return g <= baseline+50, fmt.Sprintf("%d goroutines, %d before", g, baseline)
	})
	return c
}
