package interact

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// A call to an owner whose every known address is in the host's dial
// backoff (it was unreachable for a while and has come back on one of
// them, as a NATed node does on its other relay) dials it again; a second
// call within backoffRetry does not, so calls cannot become a dial storm.
func TestCallClearsDialBackoff(t *testing.T) {
	const proto = "/lmos/test-backoff/1"
	owner, consumer := newHost(t), newHost(t)
	owner.SetStreamHandler(proto, func(s network.Stream) { _ = s.Close() })
	cl, err := NewClient(ClientDeps{Host: consumer}, TransportConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	consumer.Peerstore().AddAddrs(owner.ID(), owner.Addrs(), peerstore.PermanentAddrTTL)
	backoff := func() {
		for _, a := range owner.Addrs() {
			consumer.Network().(*swarm.Swarm).Backoff().AddBackoff(owner.ID(), a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	backoff()
	if s, err := consumer.NewStream(ctx, owner.ID(), proto); !errors.Is(err, swarm.ErrDialBackoff) {
		t.Fatalf("the host's own dial: %v, %v; want the dial backoff", s, err)
	}
	s, err := cl.openStream(ctx, owner.ID(), proto)
	if err != nil {
		t.Fatalf("a call after the backoff: %v", err)
	}
	_ = s.Reset()

	if err := consumer.Network().ClosePeer(owner.ID()); err != nil {
		t.Fatal(err)
	}
	backoff()
	if _, err := cl.openStream(ctx, owner.ID(), proto); !errors.Is(err, swarm.ErrDialBackoff) {
		t.Fatalf("a second call within %v: %v; want the dial backoff", backoffRetry, err)
	}
}
