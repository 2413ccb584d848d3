package federation

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
)

// walkingDHT is a real kad-dht whose provider lookups, once kad-dht's has
// yielded what it found, go on without finding more until they are
// stopped: a lookup still walking towards the closest peers of a large
// network, or in its follow-up round. With hideEnd, its caller does not
// hear that kad-dht's lookup reached its end condition.
type walkingDHT struct {
	*countingDHT
	hideEnd bool
	stopped chan struct{} // closed when a lookup was stopped
}

func (w *walkingDHT) FindProvidersAsync(ctx context.Context, key cid.Cid, count int) <-chan peer.AddrInfo {
	out := make(chan peer.AddrInfo, 8) // room, so that none is dropped when ctx ends
	lctx := ctx
	if w.hideEnd {
		var events <-chan *kaddht.LookupEvent
		lctx, events = kaddht.RegisterForLookupEvents(ctx)
		go func() {
			for range events {
			}
		}()
	}
	go func() {
		defer close(out)
		for ai := range w.countingDHT.FindProvidersAsync(lctx, key, count) {
			out <- ai
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
// after yielding the providers it will find, and does not reach its end
// condition, answers with their checked Things (it stops the lookup once
// no new provider came for a while) instead of waiting for the lookup to
// end.
func TestColdLookupStopsWhenQuiet(t *testing.T) {
	testColdLookupStops(t, true, 0, "quiet window")
}

// TestColdLookupStopsWhenComplete: a cold lookup stops the DHT lookup
// once kad-dht's reached its end condition or has no peer left to ask,
// without its follow-up round and without waiting out a quiet window (an
// hour here).
func TestColdLookupStopsWhenComplete(t *testing.T) {
	quiet := quietFor
	quietFor = func(time.Duration) time.Duration { return time.Hour }
	t.Cleanup(func() { quietFor = quiet })
	// Bob's kad-dht asks one peer at a time, so that it reaches the end
	// condition (the three peers closest to the key answered) while it
	// has heard of a fourth, which the follow-up would ask.
	t.Run("end condition", func(t *testing.T) {
		testColdLookupStops(t, false, 3, "kad-dht's lookup: completed", kaddht.Concurrency(1))
	})
	// Alice is the only peer.
	t.Run("no peer left", func(t *testing.T) { testColdLookupStops(t, false, 0, "kad-dht's lookup: starvation") })
}

// testColdLookupStops has bob, connected to alice and others more DHT
// servers, look up alice's capability through a walkingDHT (its kad-dht
// made with opts), which only the lookup's own stop ends before the
// test's deadline, and checks that bob answers with alice's Thing, the
// lookup stopped, and bob's log says why (stop).
func testColdLookupStops(t *testing.T, hideEnd bool, others int, stop string, opts ...kaddht.Option) {
	c := newColdLookup(t, hideEnd, others, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := c.bob.FindCapability(ctx, "tide-tables")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Publisher != c.alice.id || found[0].ThingID != c.id || found[0].Own {
		t.Fatalf("found %+v, want alice's %s", found, c.id)
	}
	select {
	case <-c.walker.stopped:
	default:
		t.Error("FindCapability answered while its lookup was still running")
	}
	c.logSays(t, fmt.Sprintf("stopped=%q", stop))
}

// TestColdLookupCallerGivesUp: a lookup whose caller's context ends
// before anything stops it says so in its summary.
func TestColdLookupCallerGivesUp(t *testing.T) {
	quiet := quietFor
	quietFor = func(time.Duration) time.Duration { return time.Hour }
	t.Cleanup(func() { quietFor = quiet })
	c := newColdLookup(t, true, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = c.bob.FindCapability(ctx, "tide-tables")
	c.logSays(t, `stopped="the caller gave up: context deadline exceeded"`)
}

// coldLookup is bob, about to look up alice's capability "tide-tables"
// (her Thing id) through walker, logging to logPath.
type coldLookup struct {
	alice, bob *member
	walker     *walkingDHT
	id         string
	logPath    string
}

// newColdLookup connects bob to alice and others more DHT servers, has
// alice publish a Thing of "tide-tables", and waits until its provider
// record is in the DHT.
func newColdLookup(t *testing.T, hideEnd bool, others int, opts ...kaddht.Option) *coldLookup {
	t.Helper()
	c := &coldLookup{walker: &walkingDHT{hideEnd: hideEnd, stopped: make(chan struct{})}}
	c.alice = newMember(t, func(p *Deps, _ *Config) { newTestDHT(t, p) })
	c.logPath = filepath.Join(t.TempDir(), "bob.log")
	logFile, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	c.bob = newMemberWith(t, directory.Config{}, func(p *Deps, _ *Config) {
		newTestDHT(t, p, opts...)
		c.walker.countingDHT = p.DHT.(*countingDHT)
		p.DHT = c.walker
	}, WithLogger(slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	connect(t, c.bob, c.alice)
	for range others {
		connect(t, c.bob, newMember(t, func(p *Deps, _ *Config) { newTestDHT(t, p) }))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for c.walker.RoutingTable().Size() < 1+others {
		select {
		case <-ctx.Done():
			t.Fatal("bob's peers never all entered its routing table")
		case <-time.After(20 * time.Millisecond):
		}
	}
	c.id = uniqueID()
	if _, _, err := c.alice.Publish(ctx, testTD(t, c.id, 0, "tide-tables"), nil); err != nil {
		t.Fatal(err)
	}
	key := lmosdht.CapabilityCID("tide-tables")
	for provided := false; !provided; {
		for ai := range c.walker.countingDHT.FindProvidersAsync(ctx, key, 1) {
			provided = ai.ID == c.alice.id
		}
		if ctx.Err() != nil {
			t.Fatal("alice's provider record never reached the DHT")
		}
	}
	return c
}

// logSays fails t unless bob's log has a lookup summary with want.
func (c *coldLookup) logSays(t *testing.T, want string) {
	t.Helper()
	logs, err := os.ReadFile(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), want) {
		t.Errorf("bob's log has no lookup summary with %s:\n%s", want, logs)
	}
}
