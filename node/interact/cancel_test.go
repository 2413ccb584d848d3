package interact

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/proto"
)

// hangingBackend is an HTTP service whose every request hangs until its
// context ends; it counts the requests it holds.
type hangingBackend struct {
	open    atomic.Int64
	started chan struct{}
	server  *httptest.Server
}

func newHangingBackend(t testing.TB) *hangingBackend {
	hb := &hangingBackend{started: make(chan struct{}, 10000)}
	hb.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hb.open.Add(1)
		defer hb.open.Add(-1)
		hb.started <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(hb.server.Close)
	return hb
}

// await waits until n requests have started.
func (hb *hangingBackend) await(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-hb.started:
		case <-timeout:
			t.Fatalf("%d backend requests open, want %d", hb.open.Load(), n)
		}
	}
}

// hangingOwner serves the test Thing, backed by a hanging HTTP service,
// on an owner host.
func hangingOwner(t testing.TB, cfg TransportConfig) (*hangingBackend, host.Host, *Server) {
	t.Helper()
	hb := newHangingBackend(t)
	b, err := NewHTTPBackend(HTTPBackendConfig{URL: hb.server.URL})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e.SetBackend(testThingID, b)
	owner := newHost(t, manyStreams(t))
	srv, err := NewServer(ServerDeps{Host: owner, Invoker: e}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		e.Close()
		b.client.CloseIdleConnections()
	})
	return hb, owner, srv
}

// awaitGoroutines waits (generously) for the goroutines to return to
// baseline+slack.
func awaitGoroutines(t testing.TB, baseline, slack int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if g <= baseline+slack {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, baseline %d\n%s", g, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitCancelled waits up to within for the backend to have no request
// open.
func (hb *hangingBackend) awaitCancelled(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for hb.open.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d backend requests still open %s after their callers left", hb.open.Load(), within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A caller that leaves ends its work on the owner: however it leaves (its
// stream closed or reset, its context cancelled, on 1.0.0 and 1.1.0
// streams), every backend request of its interactions is cancelled within
// a second or two and the owner's goroutines return to the baseline.
func TestCallerGoneCancels(t *testing.T) {
	const n = 40
	invokeBlock := func() []byte {
		req := request(proto.MsgInvokeAction, "block")
		p, err := proto.JSON.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	readTemp := func() []byte {
		p, err := proto.JSON.Marshal(request(proto.MsgReadProperty, "temperature"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	subscribe := func() []byte {
		p, err := proto.JSON.Marshal(request(proto.MsgSubscribeEvent, "alert"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		proto   string
		request func() []byte
		end     bool // the consumer's end frame right behind the request (1.1.0)
		leave   func(network.Stream) error
		shared  bool // one backend request serves every caller (a feed)
	}{
		{"1.0.0 invokeAction, stream closed", proto.ProtocolInteract, invokeBlock, false, network.Stream.Close, false},
		{"1.0.0 invokeAction, stream reset", proto.ProtocolInteract, invokeBlock, false, network.Stream.Reset, false},
		{"1.0.0 readProperty, stream closed", proto.ProtocolInteract, readTemp, false, network.Stream.Close, false},
		{"1.1.0 invokeAction, stream closed", proto.ProtocolInteractSession, invokeBlock, false, network.Stream.Close, false},
		{"1.1.0 invokeAction, stream reset", proto.ProtocolInteractSession, invokeBlock, false, network.Stream.Reset, false},
		{"1.1.0 readProperty with end frame, stream closed", proto.ProtocolInteractSession, readTemp, true, network.Stream.Close, false},
		{"1.1.0 readProperty with end frame, stream reset", proto.ProtocolInteractSession, readTemp, true, network.Stream.Reset, false},
		{"1.0.0 subscribeEvent, stream closed", proto.ProtocolInteract, subscribe, false, network.Stream.Close, true},
		{"1.1.0 subscribeEvent, stream closed", proto.ProtocolInteractSession, subscribe, false, network.Stream.Close, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hb, owner, _ := hangingOwner(t, TransportConfig{})
			consumer := newHost(t, manyStreams(t))
			connect(t, consumer, owner)
			baseline := runtime.NumGoroutine()
			strs := make([]network.Stream, n)
			for i := range n {
				str, err := consumer.NewStream(context.Background(), owner.ID(), protocol.ID(tc.proto))
				if err != nil {
					t.Fatal(err)
				}
				if err := writeFrame(str, tc.request(), tc.end); err != nil {
					t.Fatal(err)
				}
				strs[i] = str
			}
			if tc.shared {
				hb.await(t, 1)
			} else {
				hb.await(t, n)
			}
			for _, str := range strs {
				_ = tc.leave(str)
			}
			hb.awaitCancelled(t, 2*time.Second)
			awaitGoroutines(t, baseline, 10)
		})
	}

	t.Run("Client sessions, contexts cancelled", func(t *testing.T) {
		hb, owner, _ := hangingOwner(t, TransportConfig{})
		consumer := newHost(t, manyStreams(t))
		cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		connect(t, consumer, owner)
		inv := cl.Invoker(owner.ID())
		baseline := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range n {
			req := request(proto.MsgInvokeAction, "block")
			if i%2 == 1 {
				req = request(proto.MsgReadProperty, "temperature")
			}
			s, err := inv.Invoke(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for range s.Replies() {
				}
			})
		}
		hb.await(t, n)
		cancel()
		wg.Wait()
		hb.awaitCancelled(t, 2*time.Second)
		awaitGoroutines(t, baseline, 10)
	})
}

// A peer may have MaxPeerInteractions in flight on an owner: the next one
// is refused with a 429 error message while another peer is still served,
// and once its interactions end, the peer is served again.
func TestPeerInteractionLimit(t *testing.T) {
	const limit = 5
	hb, owner, _ := hangingOwner(t, TransportConfig{MaxPeerInteractions: limit})
	client := func() Invoker {
		h := newHost(t)
		cl, err := NewClient(ClientDeps{Host: h}, TransportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		connect(t, h, owner)
		return cl.Invoker(owner.ID())
	}
	a, b := client(), client()
	actx, acancel := context.WithCancel(context.Background())
	defer acancel()
	for range limit {
		if _, err := a.Invoke(actx, request(proto.MsgInvokeAction, "block")); err != nil {
			t.Fatal(err)
		}
	}
	hb.await(t, limit)

	over := invoke(t, a, request(proto.MsgReadProperty, "temperature"))
	m := next(t, over)
	wantError(t, m, "429", "interactions in flight")
	if m.Title != TitleTooManyRequests {
		t.Errorf("title %q, want %q", m.Title, TitleTooManyRequests)
	}
	over.Close()

	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	if _, err := b.Invoke(bctx, request(proto.MsgInvokeAction, "block")); err != nil {
		t.Fatal(err)
	}
	hb.await(t, 1) // the other peer is served

	acancel()
	deadline := time.Now().Add(5 * time.Second)
	for hb.open.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d backend requests open, want 1 (the other peer's)", hb.open.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// the peer's interactions ended: it is served again
	again, err := a.Invoke(bctx, request(proto.MsgInvokeAction, "block"))
	if err != nil {
		t.Fatal(err)
	}
	hb.await(t, 1)
	again.Close()
	bcancel()
	hb.awaitCancelled(t, 2*time.Second)
}

func TestTransportConfigPeerLimit(t *testing.T) {
	if got := (TransportConfig{}).withDefaults().MaxPeerInteractions; got != DefaultMaxPeerInteractions {
		t.Errorf("default MaxPeerInteractions %d, want %d", got, DefaultMaxPeerInteractions)
	}
	if err := (TransportConfig{MaxPeerInteractions: -2}).Validate(); err == nil {
		t.Error("MaxPeerInteractions -2 accepted")
	}
}
