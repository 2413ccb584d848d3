package p2p

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
)

// TestKeepAsked: a peer the node asks carries the decaying tag on the
// connection manager, bumped per ask up to its bound; one never asked
// carries none.
func TestKeepAsked(t *testing.T) {
	cm, err := connmgr.NewConnManager(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.NoListenAddrs, libp2p.ConnectionManager(cm))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	asked, err := KeepAsked(h)
	if err != nil {
		t.Fatal(err)
	}
	const p, other = peer.ID("asked"), peer.ID("other")
	value := func(id peer.ID) int {
		if ti := h.ConnManager().GetTagInfo(id); ti != nil {
			return ti.Tags[askedTag]
		}
		return 0
	}
	wait := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for value(p) != want {
			if time.Now().After(deadline) {
				t.Fatalf("tag of an asked peer: %d, want %d", value(p), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	asked(p)
	wait(askBump)
	for range askMax / askBump {
		asked(p)
	}
	wait(askMax)
	if v := value(other); v != 0 {
		t.Errorf("a peer never asked has tag %d", v)
	}
	if _, err := KeepAsked(h); err == nil {
		t.Error("a second KeepAsked on one host registered the tag twice")
	}
}
