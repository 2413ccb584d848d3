package interact

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/proto"
)

func TestBackendDown(t *testing.T) {
	svc := httptest.NewServer(http.NotFoundHandler())
	url := svc.URL
	svc.Close() // nothing listens there any more
	b, err := NewHTTPBackend(HTTPBackendConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetBackend(testThingID, b)
	inv, _, _ := overP2P(t, e, TransportConfig{})
	for _, req := range []*proto.Message{
		request(proto.MsgReadProperty, "temperature"),
		func() *proto.Message {
			m := request(proto.MsgInvokeAction, "getWeather")
			m.Input = mustValue(t, map[string]string{"city": "Oslo"})
			return m
		}(),
		request(proto.MsgSubscribeEvent, "alert"),
	} {
		got := collect(t, invoke(t, inv, req))
		if len(got) != 1 {
			t.Fatalf("%s: %+v", req.Type, got)
		}
		wantError(t, got[0], "502", "cannot be reached")
	}
	// no backend registered at all
	e.SetBackend(testThingID, nil)
	got := collect(t, invoke(t, inv, request(proto.MsgReadProperty, "temperature")))
	wantError(t, got[0], "503", "no backend")
}

// A backend that dies in the middle of an event stream and of a session:
// the consumers get a 502, not silence.
func TestBackendDiesMidStream(t *testing.T) {
	var mu sync.Mutex
	var conns []func()
	mux := http.NewServeMux()
	hijackAfter := func(w http.ResponseWriter, first string) {
		// a Go server must be told that a handler answers before the
		// request body ends (a session's body never ends by itself)
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.Header().Set("Content-Type", ContentTypeEventStream)
		w.WriteHeader(200)
		fmt.Fprint(w, first)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		conns = append(conns, func() { conn.Close() })
		mu.Unlock()
	}
	mux.HandleFunc("GET /events/alert", func(w http.ResponseWriter, r *http.Request) {
		hijackAfter(w, "data: \"one\"\n\n")
	})
	mux.HandleFunc("POST /actions/chat", func(w http.ResponseWriter, r *http.Request) {
		hijackAfter(w, "data: \"CHUNK\"\n\n")
	})
	svc := httptest.NewServer(mux)
	defer svc.Close()
	b, err := NewHTTPBackend(HTTPBackendConfig{URL: svc.URL})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetBackend(testThingID, b)
	inv, _, _ := overP2P(t, e, TransportConfig{})
	kill := func() {
		// the handler hijacks right after its first event: wait for it
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			n := len(conns)
			mu.Unlock()
			if n > 0 || time.Now().After(deadline) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c()
		}
		conns = nil
	}

	sub := invoke(t, inv, request(proto.MsgSubscribeEvent, "alert"))
	if m := next(t, sub); m.Type != proto.MsgEvent || m.Data.String() != `"one"` {
		t.Fatalf("first event: %+v", m)
	}
	kill()
	got := collect(t, sub)
	if len(got) != 1 {
		t.Fatalf("after the backend died: %+v", got)
	}
	wantError(t, got[0], "502", "event stream")

	req := request(proto.MsgInvokeAction, "chat")
	req.Stream = true
	s := invoke(t, inv, req)
	if m := next(t, s); !m.Stream {
		t.Fatalf("accept: %+v", m)
	}
	if m := next(t, s); m.Output.String() != `"CHUNK"` {
		t.Fatalf("chunk: %+v", m)
	}
	kill()
	got = collect(t, s)
	if len(got) != 1 {
		t.Fatalf("session after the backend died: %+v", got)
	}
	wantError(t, got[0], "502", "session stream")
}

// A subscriber that does not read is dropped with a 503 after the events
// already queued; the others keep receiving.
func TestSlowSubscriberDropped(t *testing.T) {
	st := newTestState(t)
	th := newSDKThing(t, st)
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetBackend(testThingID, th)
	slow := invoke(t, e, request(proto.MsgSubscribeEvent, "tick"))
	fast := invoke(t, e, request(proto.MsgSubscribeEvent, "tick"))
	defer fast.Close()
	waitFeed(t, fast, func() int { return th.Emit("tick", mustValue(t, 0)) })
	for i := 1; i <= 10; i++ {
		th.Emit("tick", mustValue(t, i))
		if m := next(t, fast); m.Data.String() != fmt.Sprint(i) {
			t.Fatalf("fast subscriber: %+v", m)
		}
	}
	got := collect(t, slow)
	if len(got) != 5 {
		t.Fatalf("slow subscriber got %d messages, want 4 events and an error", len(got))
	}
	for i, m := range got[:4] {
		if m.Type != proto.MsgEvent || m.Data.String() != fmt.Sprint(i) {
			t.Fatalf("slow subscriber message %d: %+v", i, m)
		}
	}
	wantError(t, got[4], "503", "too slow")
}

// A slow consumer of an action holds the backend back (Reply blocks)
// instead of making the owner buffer: with the client's queue, the libp2p
// window and the owner's queue full, the backend stops producing.
func TestActionBackPressure(t *testing.T) {
	produced := make(chan int, 1<<16)
	th := NewThing().OnAction("count", func(ctx context.Context, _ proto.Value, progress func(proto.Value)) (proto.Value, error) {
		big := proto.StringValue(string(make([]byte, 64<<10)))
		for i := 0; ctx.Err() == nil; i++ {
			progress(big)
			produced <- i
		}
		return proto.Value{}, ctx.Err()
	})
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetBackend(testThingID, th)
	inv, _, _ := overP2P(t, e, TransportConfig{QueueSize: 4})
	req := request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, 1)
	s := invoke(t, inv, req)
	// read nothing; the producer must stall
	n := untilStalled(produced)
	// 64 KiB chunks: queues of 4 + 4 and yamux's 16 MiB window at most
	if n > 400 {
		t.Fatalf("the backend produced %d chunks for a consumer that reads nothing", n)
	}
	s.Close()
	collect(t, s)
}

// untilStalled reads produced until nothing comes for 300 ms and returns
// the last value read.
func untilStalled(produced <-chan int) int {
	var n int
	for {
		select {
		case n = <-produced:
		case <-time.After(300 * time.Millisecond):
			return n
		}
	}
}

// Cancelling the context of Do cancels the action at the owner.
func TestClientContextCancels(t *testing.T) {
	f := p2pSDKFixture(proto.CBOR)(t, EngineConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	req := request(proto.MsgInvokeAction, "block")
	req.CorrelationID = proto.NewMessage("", "").MessageID
	s, err := f.inv.Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	next(t, s)
	<-f.state.blocked
	cancel()
	collect(t, s)
	deadline := time.Now().Add(5 * time.Second)
	for {
		q := request(proto.MsgQueryAction, "block")
		q.CorrelationID = req.CorrelationID
		got := collect(t, invoke(t, f.inv, q))
		if got[0].Status == proto.ActionCancelled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after ctx cancel: %+v", got[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOwnerUnreachable(t *testing.T) {
	consumer := newHost(t)
	cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	other := newHost(t) // up, but serves no interact protocol
	connect(t, consumer, other)
	got := collect(t, invoke(t, cl.Invoker(other.ID()), request(proto.MsgReadProperty, "temperature")))
	wantError(t, got[0], "502", "cannot be reached")
	unknown, _ := peer.Decode("12D3KooWGRUVh6BZ2p4oUhwCwJaHgctpK3xFgQH9Czs8Z7mWv4H8")
	got = collect(t, invoke(t, cl.Invoker(unknown), request(proto.MsgReadProperty, "temperature")))
	wantError(t, got[0], "502", "cannot be reached")
}

// Raw frames: an undecodable request gets a 400; a frame over the limit
// resets the stream; a request in JSON is answered in JSON.
func TestServerWire(t *testing.T) {
	f := engineFixture(t, EngineConfig{})
	owner, consumer := newHost(t), newHost(t)
	srv, err := NewServer(ServerDeps{Host: owner, Invoker: f.inv}, TransportConfig{MaxMessageSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	connect(t, consumer, owner)
	open := func() (*bufio.Reader, func([]byte)) {
		str, err := consumer.NewStream(context.Background(), owner.ID(), protocol.ID(proto.ProtocolInteract))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = str.Reset() })
		return bufio.NewReader(str), func(p []byte) {
			if err := proto.WriteFrame(str, p); err != nil {
				t.Fatal(err)
			}
		}
	}

	r, w := open()
	w([]byte(`{"messageType": 7}`))
	p, err := proto.ReadFrame(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	var m proto.Message
	if err := proto.JSON.Unmarshal(p, &m); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	wantError(t, &m, "400", "messageType")

	r, w = open()
	w(make([]byte, 2<<10))
	if _, err := proto.ReadFrame(r, 0); err == nil {
		t.Fatal("an oversize frame was answered")
	}

	r, w = open()
	req := request(proto.MsgReadProperty, "temperature")
	b, _ := proto.JSON.Marshal(req)
	w(b)
	p, err = proto.ReadFrame(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.JSON.Unmarshal(p, &m); err != nil || m.Type != proto.MsgPropertyReading {
		t.Fatalf("JSON request: %v %+v", err, m)
	}
}

// 1,000 interactions at once on one connection: all answered, in order
// per interaction, and the goroutines return to the baseline afterwards.
func TestManyConcurrentInteractions(t *testing.T) {
	f := engineFixture(t, EngineConfig{})
	inv, cl, owner := overP2P(t, f.inv.(*Engine), TransportConfig{}, manyStreams)
	// warm up the connection, then take the baseline
	collect(t, invoke(t, inv, request(proto.MsgReadProperty, "temperature")))
	baseline := runtime.NumGoroutine()

	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := request(proto.MsgInvokeAction, "count")
			req.Input = mustValue(t, 5)
			s, err := inv.Invoke(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			var got []string
			for m := range s.Replies() {
				got = append(got, m.Status+":"+m.Output.String()+m.Detail)
			}
			want := "[running:1 running:2 running:3 running:4 running:5 completed:5]"
			if fmt.Sprint(got) != want {
				errs <- fmt.Errorf("interaction %d: %v", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c := len(cl.h.Network().ConnsToPeer(owner.ID())); c != 1 {
		t.Errorf("%d connections to the owner, want 1", c)
	}
	// Each idle session stream kept for the next interaction costs the
	// owner one goroutine (its handler waiting for the next request), and
	// the Client keeps at most MaxIdleStreams per owner.
	idle := cl.idleStreams(owner.ID())
	if idle > DefaultMaxIdleStreams {
		t.Errorf("%d idle streams, want at most %d", idle, DefaultMaxIdleStreams)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if g <= baseline+5+idle {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, baseline %d, idle streams %d\n%s", g, baseline, idle, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
