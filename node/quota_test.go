package node_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Spam: what the hostile peer sends, and the quota of the honest node.
const (
	spamRecords   = 1500     // signed, valid, distinct Things
	spamPadding   = 32 << 10 // bytes of description per TD
	spamMaxThings = 20       // quota.maxThings of the victim
	spamMaxBytes  = 1 << 20  // quota.maxBytes of the victim
	spamHeapBound = 24 << 20 // the victim's heap may grow by less
	spamOffered   = spamRecords * spamPadding
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSpamQuota: a raw libp2p peer publishes valid signed records of its
// own far beyond the victim's quota, paced so that each message reaches the
// victim (without a quota the victim then holds all 1500 and its heap
// grows by about 100 MiB). The victim holds exactly the quota of that
// publisher (the first records stay, the rest are rejected on gossip,
// which penalises the spammer), its heap grows by less than
// spamHeapBound although the spammer offered spamOffered bytes, and an
// honest publisher's Thing still gets through. The same spam as fast as
// the spammer can is an attack of TestAdversarial.
func TestSpamQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	tracer := &testnet.Tracer{}
	net := testnet.New(t, 2, testnet.Options{
		Configure: func(_ int, cfg *config.Config) { cfg.Quota = spamQuotaConfig },
		NodeOptions: func(i int) []node.Option {
			if i == 0 {
				return []node.Option{node.WithPubSubTracer(tracer)}
			}
			return nil
		},
	})
	net.Link(1, 0)
	victim, honest := net.Nodes[0], net.Nodes[1]
	spamQuota(t, victim, tracer, newHostile(t, victim), 10*time.Millisecond, spamHeapBound)

	// An honest publisher is not affected.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := testnet.UniqueID(t)
	if _, _, err := honest.Federation().Publish(ctx, testnet.TD(t, id, "Honest", "honest"), nil); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "the honest Thing reaches the victim", waitLong, testnet.All([]*node.Node{victim}, has(honest.PeerID(), id, 1, false)))
}

// spamQuotaConfig is the victim's quota in the spam tests.
var spamQuotaConfig = config.QuotaConfig{MaxThings: spamMaxThings, MaxBytes: spamMaxBytes}

// spamResult is what a spam run left on the victim.
type spamResult struct {
	offered, held int
	heldBytes     int64
	refusals      int // the victim's gossip refusals, all authors
	rejected      int // rejections of the spammer's messages
	before, after uint64
	heapGrowth    int64
}

// spamQuota has h publish spamRecords valid records of its own to victim
// (configured with spamQuotaConfig, tracer its gossip tracer), pace apart,
// and checks that the victim holds the spammer's quota — the first records —
// and no more, rejects the spammer, and that the heap grows by less than
// bound.
func spamQuota(t *testing.T, victim *node.Node, tracer *testnet.Tracer, h *hostile, pace time.Duration, bound int64) spamResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Sign everything first: the heap is measured around the sending (the
	// spammer lives in this process too: its records and gossipsub are in
	// both measurements).
	pad := strings.Repeat("spam ", spamPadding/5)
	raws := make([][]byte, spamRecords)
	for i := range raws {
		td := testnet.TD(t, fmt.Sprintf("urn:spam:%05d", i), "Spam", "spam")
		td.Description = pad
		td.Seq = 1
		rec, err := lmosproto.SignThing(td, h.key, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = rec.Raw
	}
	before := heapInUse()

	for _, raw := range raws {
		if err := h.topic.Publish(ctx, raw); err != nil {
			t.Fatalf("hostile publish: %v", err)
		}
		time.Sleep(pace)
	}
	testnet.WaitFor(t, "the victim holds the spammer's quota", waitLong, func() (bool, string) {
		n, b := victim.Directory().Usage(h.id)
		return n == spamMaxThings || b+int64(len(raws[0])) > spamMaxBytes, fmt.Sprintf("%d Things, %d bytes", n, b)
	})
	testnet.WaitFor(t, "the spammer is rejected for going over quota", waitLong, func() (bool, string) {
		return len(rejected(tracer, h.id)) > 0, fmt.Sprintf("refusals %d", len(tracer.Refused()))
	})
	// Everything the hostile queued has been sent or dropped once its
	// message cache has shifted out (gossipsub history: a few heartbeats).
	time.Sleep(3 * time.Second)
	after := heapInUse()
	runtime.KeepAlive(raws) // live at both measurements: not counted

	things, bytes := victim.Directory().Usage(h.id)
	if things > spamMaxThings || bytes > spamMaxBytes {
		t.Errorf("the victim holds %d Things, %d bytes of the spammer; the quota is %d, %d", things, bytes, spamMaxThings, spamMaxBytes)
	}
	// The first records are the ones kept.
	res, err := victim.Directory().Search(directory.Query{Publisher: h.id, ByID: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != things || res.Entries[0].ThingID != "urn:spam:00000" {
		t.Errorf("held: %d entries, first %q", len(res.Entries), res.Entries[0].ThingID)
	}
	r := spamResult{offered: len(raws), held: things, heldBytes: bytes, refusals: len(tracer.Refused()), rejected: len(rejected(tracer, h.id)),
		before: before, after: after, heapGrowth: int64(after) - int64(before)}
	t.Logf("spam: %d records of %d KiB offered (%d MiB); victim holds %d Things, %d KiB; %d refusals (%d rejected over quota); heap %d → %d MiB (growth %d KiB, bound %d MiB)",
		spamRecords, spamPadding>>10, spamOffered>>20, things, bytes>>10, r.refusals, r.rejected,
		before>>20, after>>20, r.heapGrowth>>10, bound>>20)
	if r.heapGrowth >= bound {
		t.Errorf("the heap grew by %d MiB, more than %d MiB", r.heapGrowth>>20, bound>>20)
	}
	return r
}

// rejected returns the refusals (Reject, not Ignore) of messages authored
// by p.
func rejected(tr *testnet.Tracer, p interface{ String() string }) []testnet.Verdict {
	var out []testnet.Verdict
	for _, v := range tr.Refused() {
		if v.Author.String() == p.String() && v.Reason == pubsub.RejectValidationFailed {
			out = append(out, v)
		}
	}
	return out
}
