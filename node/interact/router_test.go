package interact

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// answering is an Invoker that answers every request at once with a
// reading named after it.
type answering string

func (a answering) Invoke(_ context.Context, req *proto.Message) (Session, error) {
	reply := &proto.Message{Type: proto.MsgPropertyReading, ThingID: req.ThingID, Name: string(a), CorrelationID: req.CorrelationID}
	return newClosedSession(req, reply), nil
}

// remoteFunc is a Remote made of a function.
type remoteFunc func(owner peer.ID) Invoker

func (f remoteFunc) Invoker(owner peer.ID) Invoker { return f(owner) }

// For is the one rule of how to call a Thing whose publisher is known:
// this node's own Things go to the local Invoker, the others to their
// publisher's.
func TestRouterFor(t *testing.T) {
	const self, other = peer.ID("self"), peer.ID("other")
	var asked []peer.ID
	r := NewRouter(self, answering("local"), remoteFunc(func(owner peer.ID) Invoker {
		asked = append(asked, owner)
		return answering("remote " + string(owner))
	}), nil)
	for _, tc := range []struct {
		publisher peer.ID
		want      Invoker
	}{
		{self, answering("local")},
		{other, answering("remote other")},
	} {
		if got := r.For(tc.publisher); got != tc.want {
			t.Errorf("For(%s) = %v, want %v", tc.publisher, got, tc.want)
		}
	}
	if len(asked) != 1 || asked[0] != other {
		t.Errorf("Remote asked for %v, want [other]", asked)
	}
}

// InstrumentRouter reports the calls through For under its side and
// transport, local and remote alike.
func TestInstrumentRouter(t *testing.T) {
	const self, other = peer.ID("self"), peer.ID("other")
	ended := make(chan string, 2)
	ins := Instrumentation{Ended: func(side, transport, operation string, status int, _ time.Duration) {
		ended <- side + " " + transport + " " + operation
	}}
	r := InstrumentRouter(NewRouter(self, answering("local"), remoteFunc(func(peer.ID) Invoker { return answering("remote") }), nil),
		SideConsumer, "http", ins)
	for _, p := range []peer.ID{self, other} {
		req := request(proto.MsgReadProperty, "temperature")
		sess, err := r.For(p).Invoke(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for range sess.Replies() {
		}
		_ = sess.Close()
		select {
		case got := <-ended:
			if want := "consumer http readProperty"; got != want {
				t.Errorf("For(%s): reported %q, want %q", p, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("For(%s): no report", p)
		}
	}
}
