package interact

import (
	"context"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// members is a membership list an Authorize hook consults: callers over
// libp2p must be in it, local callers are the owner's.
type members struct {
	mu    sync.Mutex
	peers map[peer.ID]bool
	asked int
}

func (m *members) set(p peer.ID, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peers[p] = ok
}

func (m *members) authorize(ctx context.Context, _ *proto.TD, _ *proto.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	p, remote := RemotePeerFrom(ctx)
	if !remote || m.peers[p] {
		return nil
	}
	return ErrForbidden
}

// groupFixture is the test Thing restricted to the group "g-alpha", its
// engine authorizing with m, served over libp2p.
func groupFixture(t *testing.T) (e *Engine, remote Invoker, consumer peer.ID, m *members, st *testThingState, th *Thing) {
	t.Helper()
	td := testTD(t)
	td.Groups = []string{"g-alpha"}
	m = &members{peers: map[peer.ID]bool{}}
	e, err := NewEngine(EngineDeps{
		Things:    ThingsFunc(func(id string) (*proto.TD, bool) { return td, id == testThingID }),
		Authorize: m.authorize,
	}, EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	st = newTestState(t)
	th = newSDKThing(t, st)
	e.SetBackend(testThingID, th)
	remote, cl, _ := overP2P(t, e, TransportConfig{})
	return e, remote, cl.h.ID(), m, st, th
}

func TestAuthorizeRemoteCaller(t *testing.T) {
	e, remote, consumer, m, _, _ := groupFixture(t)

	// An outsider over libp2p: 403 naming the Thing and its group.
	got := collect(t, invoke(t, remote, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 {
		t.Fatalf("outsider got %v", got)
	}
	wantError(t, got[0], "403", testThingID)
	wantError(t, got[0], "403", "g-alpha")
	if got[0].Title != TitleForbidden {
		t.Fatalf("title %q, want %q", got[0].Title, TitleForbidden)
	}
	sub := collect(t, invoke(t, remote, request(proto.MsgSubscribeEvent, "alert")))
	if len(sub) != 1 {
		t.Fatalf("outsider's subscription got %v", sub)
	}
	wantError(t, sub[0], "403", "g-alpha")

	// The owner's own call (no remote peer) is allowed.
	got = collect(t, invoke(t, e, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading || got[0].Value.String() != "21.5" {
		t.Fatalf("local call: %+v", got)
	}

	// A member over libp2p is allowed.
	m.set(consumer, true)
	got = collect(t, invoke(t, remote, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading || got[0].Value.String() != "21.5" {
		t.Fatalf("member's call: %+v", got)
	}
}

// A Thing without groups never asks the hook.
func TestAuthorizePublicThing(t *testing.T) {
	m := &members{peers: map[peer.ID]bool{}}
	f := authEngineFixture(t, m.authorize, EngineConfig{})
	remote, _, _ := overP2P(t, f.inv.(*Engine), TransportConfig{})
	got := collect(t, invoke(t, remote, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading {
		t.Fatalf("public Thing: %+v", got)
	}
	if m.asked != 0 {
		t.Fatalf("hook asked %d times for a public Thing", m.asked)
	}
}

func TestReauthorizeEndsInteractions(t *testing.T) {
	e, remote, consumer, m, st, th := groupFixture(t)
	m.set(consumer, true)

	sub := invoke(t, remote, request(proto.MsgSubscribeEvent, "alert"))
	defer sub.Close()
	if ev := waitFeed(t, sub, func() int { return th.Emit("alert", proto.StringValue("storm")) }); ev.Type != proto.MsgEvent {
		t.Fatalf("member's subscription: %+v", ev)
	}
	act := invoke(t, remote, request(proto.MsgInvokeAction, "block"))
	defer act.Close()
	<-st.blocked
	// The owner's own subscription is not the remote peer's.
	local := invoke(t, e, request(proto.MsgSubscribeEvent, "alert"))
	defer local.Close()

	e.Reauthorize() // still a member: nothing ends
	if ev := waitFeed(t, sub, func() int { return th.Emit("alert", proto.StringValue("hail")) }); ev.Type != proto.MsgEvent || ev.Data.String() != `"hail"` {
		t.Fatalf("after a reauthorization that allows: %+v", ev)
	}

	m.set(consumer, false)
	e.Reauthorize()
	rest := collect(t, sub)
	if len(rest) == 0 {
		t.Fatal("subscription ended without a message")
	}
	wantError(t, rest[len(rest)-1], "403", "g-alpha")
	got := collect(t, act)
	if len(got) == 0 {
		t.Fatal("invocation ended without a message")
	}
	wantError(t, got[len(got)-1], "403", "g-alpha")

	// The local subscriber still gets events: "hail", then "sun".
	if n := th.Emit("alert", proto.StringValue("sun")); n == 0 {
		t.Fatal("the local subscription's feed ended with the remote one")
	}
	for _, want := range []string{`"hail"`, `"sun"`} {
		if ev := next(t, local); ev.Type != proto.MsgEvent || ev.Data.String() != want {
			t.Fatalf("local subscription after the remote one was refused: %+v, want %s", ev, want)
		}
	}
}
