package federation

import (
	"context"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
)

// walkingDHT is a real kad-dht whose provider lookups, once kad-dht's has
// yielded what it found, go on without finding more until they are
// stopped: a lookup still walking towards the closest peers of a large
// network.
type walkingDHT struct {
	*countingDHT
	stopped chan struct{} // closed when a lookup was stopped
}

func (w *walkingDHT) FindProvidersAsync(ctx context.Context, key cid.Cid, count int) <-chan peer.AddrInfo {
	out := make(chan peer.AddrInfo)
	go func() {
		defer close(out)
		for ai := range w.countingDHT.FindProvidersAsync(ctx, key, count) {
			select {
			case out <- ai:
			case <-ctx.Done():
			}
		}
		<-ctx.Done()
		select {
		case <-w.stopped:
		default:
			close(w.stopped)
		}
	}()
	return out
}

// TestColdLookupStopsWhenQuiet: a cold lookup whose DHT lookup goes on
// after yielding the providers it will find answers with their checked
// Things (it stops the lookup once no new provider came for a while)
// instead of waiting for the lookup to end.
func TestColdLookupStopsWhenQuiet(t *testing.T) {
	alice := newMember(t, func(p *Deps, _ *Config) { newTestDHT(t, p) })
	walker := &walkingDHT{stopped: make(chan struct{})}
	bob := newMember(t, func(p *Deps, _ *Config) {
		newTestDHT(t, p)
		walker.countingDHT = p.DHT.(*countingDHT)
		p.DHT = walker
	})
	connect(t, bob, alice)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for walker.RoutingTable().Size() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("alice never entered bob's routing table")
		case <-time.After(20 * time.Millisecond):
		}
	}
	id := uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, id, 0, "tide-tables"), nil); err != nil {
		t.Fatal(err)
	}
	key := lmosdht.CapabilityCID("tide-tables")
	for provided := false; !provided; {
		for ai := range walker.countingDHT.FindProvidersAsync(ctx, key, 1) {
			provided = ai.ID == alice.id
		}
		if ctx.Err() != nil {
			t.Fatal("alice's provider record never reached the DHT")
		}
	}

	// Only the lookup's quiet stop can end this call before the test's
	// deadline: the lookup itself never ends by itself.
	found, err := bob.FindCapability(ctx, "tide-tables")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Publisher != alice.id || found[0].ThingID != id || found[0].Own {
		t.Fatalf("found %+v, want alice's %s", found, id)
	}
	select {
	case <-walker.stopped:
	default:
		t.Error("FindCapability answered while its lookup was still running")
	}
}

func TestQuietWindow(t *testing.T) {
	for _, c := range []struct{ first, want time.Duration }{
		{0, minQuiet},
		{minQuiet, minQuiet},
		{1800 * time.Millisecond, 900 * time.Millisecond},
		{time.Hour, maxQuiet},
	} {
		if got := quietWindow(c.first); got != c.want {
			t.Errorf("quietWindow(%s) = %s, want %s", c.first, got, c.want)
		}
	}
}
