package interact

import (
	"bufio"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/proto"
)

// sessionPair is an owner serving the test Thing (Go SDK) and a consumer
// Client, with the number of streams the owner accepted, by protocol.
type sessionPair struct {
	f        *fixture
	engine   *Engine
	cl       *Client
	srv      *Server
	owner    host.Host
	sessions atomic.Int64 // streams of ProtocolInteractSession
	legacy   atomic.Int64 // streams of ProtocolInteract
}

// newSessionPair starts the pair; with legacyOnly the owner speaks
// ProtocolInteract only, as a node from before ProtocolInteractSession.
func newSessionPair(t *testing.T, legacyOnly bool) *sessionPair {
	t.Helper()
	f := engineFixture(t, EngineConfig{})
	p := &sessionPair{f: f, engine: f.inv.(*Engine)}
	p.owner = newHost(t)
	consumer := newHost(t)
	var err error
	p.srv, err = NewServer(ServerDeps{Host: p.owner, Invoker: f.inv}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p.countStreams(legacyOnly)
	p.cl, err = NewClient(ClientDeps{Host: consumer}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.srv.Close() })
	t.Cleanup(func() { p.cl.Close() })
	connect(t, consumer, p.owner)
	f.inv = p.cl.Invoker(p.owner.ID())
	return p
}

// countStreams wraps the server's handlers to count the streams.
func (p *sessionPair) countStreams(legacyOnly bool) {
	if legacyOnly {
		p.owner.RemoveStreamHandler(protocol.ID(proto.ProtocolInteractSession))
	} else {
		p.owner.SetStreamHandler(protocol.ID(proto.ProtocolInteractSession), func(str network.Stream) {
			p.sessions.Add(1)
			p.srv.handleSession(str)
		})
	}
	p.owner.SetStreamHandler(protocol.ID(proto.ProtocolInteract), func(str network.Stream) {
		p.legacy.Add(1)
		p.srv.handle(str)
	})
}

func (p *sessionPair) read(t *testing.T) {
	t.Helper()
	s := invoke(t, p.f.inv, request(proto.MsgReadProperty, "temperature"))
	got := collect(t, s)
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading || got[0].Value.String() != "21.5" {
		t.Fatalf("readProperty: %+v", got)
	}
	s.Close() // after the end: waits until the stream is back in the pool
}

func (p *sessionPair) streams() (sessions, legacy int64) {
	return p.sessions.Load(), p.legacy.Load()
}

// Every pattern over ProtocolInteractSession streams reused between
// interactions (TestPatternsP2PSDK), and over a node that speaks
// ProtocolInteract only.
func TestPatternsP2PLegacyOwner(t *testing.T) {
	runPatterns(t, func(t *testing.T, cfg EngineConfig) *fixture {
		f := engineFixture(t, cfg)
		owner, consumer := newHost(t), newHost(t)
		srv, err := NewServer(ServerDeps{Host: owner, Invoker: f.inv}, TransportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		owner.RemoveStreamHandler(protocol.ID(proto.ProtocolInteractSession))
		cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		t.Cleanup(func() { cl.Close() })
		connect(t, consumer, owner)
		f.inv = cl.Invoker(owner.ID())
		return f
	})
}

// Interactions one after another share one stream; an old owner gets one
// stream per interaction.
func TestSessionStreamReused(t *testing.T) {
	p := newSessionPair(t, false)
	for range 5 {
		p.read(t)
	}
	// an invocation with progress reports, and a subscription the
	// consumer ends: both end cleanly and leave the stream reusable
	req := request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, 3)
	cs := invoke(t, p.f.inv, req)
	if got := collect(t, cs); len(got) != 4 || got[3].Status != proto.ActionCompleted {
		t.Fatalf("count: %+v", got)
	}
	cs.Close()
	sub := invoke(t, p.f.inv, request(proto.MsgSubscribeEvent, "alert"))
	if err := sub.Send(context.Background(), &proto.Message{Type: proto.MsgUnsubscribeEvent}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, sub); len(got) != 0 {
		t.Fatalf("subscription after unsubscribe: %+v", got)
	}
	sub.Close()
	p.read(t)
	if s, l := p.streams(); s != 1 || l != 0 {
		t.Fatalf("streams: %d session, %d legacy; want 1, 0", s, l)
	}

	old := newSessionPair(t, true)
	for range 3 {
		old.read(t)
	}
	if s, l := old.streams(); s != 0 || l != 3 {
		t.Fatalf("old owner: %d session, %d legacy streams; want 0, 3", s, l)
	}
}

// An interaction the consumer abandons (Close, a cancelled context) resets
// its stream: it is cancelled at the owner, and the next interaction runs
// on a new stream and gets its own answer.
func TestSessionCancelledNotReused(t *testing.T) {
	p := newSessionPair(t, false)
	p.read(t)               // stream 1, idle afterwards
	s := startBlock(t, p.f) // takes stream 1
	id := s.Request().CorrelationID
	s.Close()
	collect(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	req := request(proto.MsgInvokeAction, "block")
	req.CorrelationID = proto.NewMessage("", "").MessageID
	s2, err := p.f.inv.Invoke(ctx, req) // stream 2
	if err != nil {
		t.Fatal(err)
	}
	next(t, s2)
	<-p.f.state.blocked
	cancel()
	collect(t, s2)
	p.read(t) // stream 3
	p.read(t) // stream 3 again
	if n, _ := p.streams(); n != 3 {
		t.Fatalf("%d session streams, want 3 (the abandoned ones are not reused)", n)
	}
	for _, cid := range []string{id, req.CorrelationID} {
		q := request(proto.MsgQueryAction, "block")
		q.CorrelationID = cid
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := collect(t, invoke(t, p.f.inv, q))
			if len(got) == 1 && got[0].Status == proto.ActionCancelled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("abandoned invocation %s: %+v", cid, got)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// An owner that resets a session stream in the middle of an interaction:
// the consumer gets a 502 and the next interaction a new stream.
func TestSessionPeerResets(t *testing.T) {
	p := newSessionPair(t, false)
	p.read(t)
	var streams atomic.Int64
	p.owner.SetStreamHandler(protocol.ID(proto.ProtocolInteractSession), func(str network.Stream) {
		if streams.Add(1) > 1 {
			p.srv.handleSession(str)
			return
		}
		// the first stream: read one request, then reset
		br := bufio.NewReader(str)
		for {
			if _, err := proto.ReadFrame(br, 0); err != nil {
				return
			}
			_ = str.Reset()
		}
	})
	p.cl.Close() // drop the idle stream served by the old handler
	cl, err := NewClient(ClientDeps{Host: p.cl.h}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p.f.inv = cl.Invoker(p.owner.ID())
	got := collect(t, invoke(t, p.f.inv, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 {
		t.Fatalf("after a reset: %+v", got)
	}
	wantError(t, got[0], "502", "stream")
	p.read(t)
	p.read(t)
	if n := streams.Load(); n != 2 {
		t.Fatalf("%d streams, want 2", n)
	}
	if idle := cl.idleStreams(p.owner.ID()); idle != 1 {
		t.Fatalf("%d idle streams, want 1", idle)
	}
}

// An owner that closes an idle session stream (its SessionIdleTimeout, a
// restarted Server): the consumer's next request, written on that stream,
// reached nobody and goes again on a new stream.
func TestSessionOwnerClosedIdleStream(t *testing.T) {
	p := newSessionPair(t, false)
	p.read(t)
	if idle := p.cl.idleStreams(p.owner.ID()); idle != 1 {
		t.Fatalf("%d idle streams, want 1", idle)
	}
	p.srv.Close() // closes the idle stream cleanly
	srv, err := NewServer(ServerDeps{Host: p.owner, Invoker: p.engine}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p.srv = srv
	p.countStreams(false)
	p.read(t)
	p.read(t)
	if s, _ := p.streams(); s != 2 {
		t.Fatalf("%d session streams, want 2", s)
	}
}

// Back-pressure and ordering on a reused stream: a consumer that reads
// nothing stalls the action's producer, and a later interaction on the
// same stream gets its replies in order.
func TestSessionBackPressureThenReuse(t *testing.T) {
	produced := make(chan int, 1<<16)
	th := NewThing().OnAction("count", func(ctx context.Context, in proto.Value, progress func(proto.Value)) (proto.Value, error) {
		var n int
		if err := in.Decode(&n); err != nil {
			return proto.Value{}, err
		}
		big := proto.StringValue(string(make([]byte, 64<<10)))
		for i := 0; i < n && ctx.Err() == nil; i++ {
			progress(big)
			produced <- i
		}
		return mustValue(t, n), ctx.Err()
	})
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{QueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetBackend(testThingID, th)
	inv, cl, owner := overP2P(t, e, TransportConfig{QueueSize: 4})
	req := request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, 600)
	s := invoke(t, inv, req)
	n := untilStalled(produced)
	if n > 400 {
		t.Fatalf("the backend produced %d chunks for a consumer that reads nothing", n)
	}
	// now read it all, in order: the stream goes back to the pool (600
	// chunks of 64 KiB: a hang guard longer than collect's)
	var got []*proto.Message
	guard := time.After(2 * time.Minute)
	for reading := true; reading; {
		select {
		case m, ok := <-s.Replies():
			if !ok {
				reading = false
				break
			}
			got = append(got, m)
		case <-guard:
			t.Fatalf("replies not closed after 2 min; got %d", len(got))
		}
	}
	if last := got[len(got)-1]; last.Status != proto.ActionCompleted || last.Output.String() != "600" {
		t.Fatalf("last reply: %+v", last)
	}
	if len(got) != 601 {
		t.Fatalf("%d replies, want 601", len(got))
	}
	s.Close() // after the end: waits until the stream is back in the pool
	if idle := cl.idleStreams(owner.ID()); idle != 1 {
		t.Fatalf("%d idle streams, want 1", idle)
	}
	req = request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, 3)
	got = collect(t, invoke(t, inv, req))
	if len(got) != 4 || got[3].Status != proto.ActionCompleted || got[3].Output.String() != "3" {
		t.Fatalf("on the reused stream: %+v", got)
	}
}

// A consumer that reads the end of an invocation only after the owner's
// CloseGrace still gets every reply (the owner closes the stream instead
// of reusing it, and does not reset it), and its next call works.
func TestSessionSlowConsumerKeepsReplies(t *testing.T) {
	f := engineFixture(t, EngineConfig{})
	owner, consumer := newHost(t), newHost(t)
	srv, err := NewServer(ServerDeps{Host: owner, Invoker: f.inv}, TransportConfig{CloseGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(func() { cl.Close() })
	connect(t, consumer, owner)
	inv := cl.Invoker(owner.ID())
	for range 2 {
		req := request(proto.MsgInvokeAction, "count")
		req.Input = mustValue(t, 3)
		s := invoke(t, inv, req)
		time.Sleep(300 * time.Millisecond) // read nothing for longer than CloseGrace
		got := collect(t, s)
		if len(got) != 4 || got[3].Status != proto.ActionCompleted {
			t.Fatalf("slow consumer: %+v", got)
		}
		s.Close()
	}
	s := invoke(t, inv, request(proto.MsgReadProperty, "temperature"))
	if got := collect(t, s); len(got) != 1 || got[0].Type != proto.MsgPropertyReading {
		t.Fatalf("after a slow consumer: %+v", got)
	}
}

// A property read that comes with the consumer's end of the interaction
// runs on the owner's stream goroutine (withInline): it still ends with
// the 504 of RequestTimeout, the stream serves the next read, and
// concurrent reads each get their own answer. Closing the owner's Server
// cancels a read in flight, whose consumer gets an error.
func TestSessionInlineRead(t *testing.T) {
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var n atomic.Int64
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	e.SetBackend(testThingID, BackendFunc(func(ctx context.Context, x *Exchange) error {
		if x.Request().Name == "broken" {
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			select {
			case cancelled <- struct{}{}:
			default:
			}
			return ctx.Err()
		}
		return x.Reading(mustValue(t, n.Add(1)))
	}))
	owner, consumer := newHost(t), newHost(t)
	srv, err := NewServer(ServerDeps{Host: owner, Invoker: e}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	connect(t, consumer, owner)
	inv := cl.Invoker(owner.ID())

	read := func(name string) *proto.Message {
		t.Helper()
		req := request(proto.MsgReadProperty, name)
		got := collect(t, invoke(t, inv, req))
		if len(got) != 1 || got[0].CorrelationID != req.Correlation() {
			t.Fatalf("read %s: %+v", name, got)
		}
		return got[0]
	}
	wantError(t, read("broken"), "504", "")
	<-started
	<-cancelled
	if m := read("temperature"); m.Type != proto.MsgPropertyReading || m.Value.String() != "1" {
		t.Fatalf("read after the timeout: %+v", m)
	}

	// concurrent reads: each its own reading, none lost or swapped
	const readers = 16
	values := make(chan string, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			req := request(proto.MsgReadProperty, "temperature")
			s, err := inv.Invoke(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			for m := range s.Replies() {
				if m.Type != proto.MsgPropertyReading || m.CorrelationID != req.Correlation() {
					t.Errorf("reply %+v to %s", m, req.Correlation())
				}
				values <- m.Value.String()
			}
			s.Close()
		})
	}
	wg.Wait()
	close(values)
	seen := map[string]bool{}
	for v := range values {
		seen[v] = true
	}
	if len(seen) != readers {
		t.Fatalf("%d distinct readings of %d reads: %v", len(seen), readers, seen)
	}

	s := invoke(t, inv, request(proto.MsgReadProperty, "broken"))
	<-started
	srv.Close()
	<-cancelled
	if got := collect(t, s); len(got) != 1 || got[0].Type != proto.MsgError {
		t.Fatalf("read while the owner closed: %+v", got)
	}
}
