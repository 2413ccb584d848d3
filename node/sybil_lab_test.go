package node_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The sybil run of issue 24: sybilIDs fresh identities each publish
// sybilTDs valid TDs of about 60 KB by gossip — within the per-publisher
// quota, 60 MB in all — into a loopback federation of three nodes.
const (
	sybilIDs     = 20
	sybilTDs     = 50
	sybilPadding = 60_000
	// sybilBudget is the victim's quota.maxLearnedBytes in the lab.
	sybilBudget = 8 << 20
)

// TestSybilLab (a lab: LMOS_SYBIL_LAB=1; about a minute) floods a victim
// with the sybil run and reports its heap and RSS before and after, with
// the budget for learned records at sybilBudget ("budget") and, for
// comparison, unbounded as before issue 24 ("unbounded"). With the
// budget, the learned bytes stay under it, the honest Things held before
// the flood stay, and an honest Thing published during the flood that
// the full budget refused is found by a lookup of its capability (it
// then displaces sybil records, less valuable than a Thing just looked
// up). Every node of the federation has the same budget. The heap is
// measured before the sybils start and after they are closed: its growth
// is what the three nodes kept; RSS is the process's (nodes and sybils),
// with its high-water mark.
func TestSybilLab(t *testing.T) {
	if os.Getenv("LMOS_SYBIL_LAB") == "" {
		t.Skip("lab: set LMOS_SYBIL_LAB=1 (about a minute)")
	}
	for _, budget := range []int64{sybilBudget, 1 << 40} {
		name := "budget"
		if budget > sybilBudget {
			name = "unbounded"
		}
		t.Run(name, func(t *testing.T) { sybilRun(t, budget) })
	}
}

func sybilRun(t *testing.T, budget int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	net := testnet.New(t, 3, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.Quota.MaxLearnedBytes = budget
		cfg.Role = config.RoleDirectory // what the flood fills, not a node that turns light
	}})
	net.Link(1, 0)
	net.Link(2, 1)
	victim, honest, late := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	var held []string
	for range 5 {
		id := testnet.UniqueID(t)
		if _, _, err := honest.Federation().Publish(ctx, testnet.TD(t, id, "Honest", "honest-forecast"), nil); err != nil {
			t.Fatal(err)
		}
		held = append(held, id)
	}
	for _, id := range held {
		testnet.WaitFor(t, "the honest Things reach the victim", waitLong, func() (bool, string) {
			_, ok := victim.Directory().Get(honest.PeerID(), id)
			return ok, id
		})
	}

	heapBefore, rssBefore := heapInUse(), rssKB(t, "VmRSS")
	lateID := testnet.UniqueID(t)
	// The sybils live in a subtest: they are closed when it ends, before
	// the heap is measured again (the process's growth is then what the
	// three nodes kept).
	sybilPeers := make([]peer.ID, sybilIDs)
	t.Run("flood", func(t *testing.T) {
		sybils := make([]*hostile, sybilIDs)
		raws := make([][][]byte, sybilIDs)
		pad := strings.Repeat("s", sybilPadding)
		for i := range sybils {
			sybils[i] = newHostile(t, victim, honest)
			sybilPeers[i] = sybils[i].id
			for k := range sybilTDs {
				td := testnet.TD(t, fmt.Sprintf("urn:sybil:%d:%d", i, k), "Sybil", "sybil")
				td.Description, td.Seq = pad, 1
				rec, err := lmosproto.SignThing(td, sybils[i].key, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				raws[i] = append(raws[i], rec.Raw)
			}
		}
		var wg sync.WaitGroup
		for i, s := range sybils {
			wg.Go(func() {
				for _, raw := range raws[i] {
					if err := s.topic.Publish(ctx, raw); err != nil {
						t.Errorf("sybil publish: %v", err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
		// An honest Thing published during the flood by a node the victim
		// is not connected to.
		if _, _, err := late.Federation().Publish(ctx, testnet.TD(t, lateID, "Late honest", "late-forecast"), nil); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	})
	// Settled: the victim's learned bytes have not changed for 5 s (what
	// gossipsub throttled or dropped under the flood is not sent again).
	last, stable := int64(-1), time.Now()
	testnet.WaitFor(t, "the flood settles on the victim", 2*time.Minute, func() (bool, string) {
		n := victim.Directory().LearnedBytes()
		if n != last {
			last, stable = n, time.Now()
		}
		return time.Since(stable) > 5*time.Second, fmt.Sprintf("%d learned bytes", n)
	})
	time.Sleep(3 * time.Second) // gossipsub's message caches shift out
	heapAfter, rssAfter, rssPeak := heapInUse(), rssKB(t, "VmRSS"), rssKB(t, "VmHWM")
	if path := os.Getenv("LMOS_SYBIL_HEAP"); path != "" {
		writeHeapProfile(t, path)
	}
	learned := victim.Directory().LearnedBytes()
	sybilThings := 0
	for _, id := range sybilPeers {
		n, _ := victim.Directory().Usage(id)
		sybilThings += n
	}
	t.Logf("%d sybils × %d TDs of %d KB offered (%d MB); victim holds %d sybil Things, %d KB learned (budget %d KB); heap of the three nodes %d → %d MB, process RSS %d → %d MB (peak %d MB, the sybils included)",
		sybilIDs, sybilTDs, sybilPadding/1000, sybilIDs*sybilTDs*sybilPadding/1_000_000, sybilThings, learned>>10, min(budget, 1<<30)>>10,
		heapBefore>>20, heapAfter>>20, rssBefore>>10, rssAfter>>10, rssPeak>>10)
	if budget > sybilBudget {
		return
	}
	if learned > budget {
		t.Errorf("the victim holds %d learned bytes, over its budget of %d", learned, budget)
	}
	for _, id := range held {
		if _, ok := victim.Directory().Get(honest.PeerID(), id); !ok {
			t.Errorf("the honest Thing %s held before the flood is gone", id)
		}
	}
	found, err := victim.Federation().FindCapability(ctx, "late-forecast")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(found, func(e directory.Entry) bool { return e.ThingID == lateID }) {
		t.Errorf("a lookup of the late honest Thing's capability found %d Things, not it", len(found))
	}
	if n := victim.Directory().LearnedBytes(); n > budget {
		t.Errorf("after the lookup the victim holds %d learned bytes, over its budget of %d", n, budget)
	}
}

// rssKB reads a memory figure of this process (VmRSS, VmHWM) in KiB.
func rssKB(t *testing.T, field string) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// writeHeapProfile writes the live heap to path (LMOS_SYBIL_HEAP), for
// go tool pprof.
func writeHeapProfile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
}
