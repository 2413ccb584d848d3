package node_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// BenchmarkAnnouncementIntake measures what every node pays for each
// announcement it accepts (docs/performance.md, "At internet scale, on
// paper"): the check of a record it has not seen before (size, proof, TD
// schema, freshness, publisher — what the announce validator does) and its
// store in a directory on the node's pebble datastore, one goroutine. The
// records are signed beforehand by 64 publishers, one new Thing each; it
// also reports the signed record's size and a presence beat's payload size.
func BenchmarkAnnouncementIntake(b *testing.B) {
	type pub struct {
		id  peer.ID
		key ed25519.PrivateKey
	}
	pubs := make([]pub, 65) // the first is the node itself
	for i := range pubs {
		var err error
		if _, pubs[i].key, err = ed25519.GenerateKey(rand.Reader); err == nil {
			pubs[i].id, err = lmosproto.PeerIDFromEd25519(pubs[i].key.Public().(ed25519.PublicKey))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	self := pubs[0].id
	pubs = pubs[1:]
	store, err := datastore.Open(datastore.Deps{Self: self}, datastore.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	dir, err := directory.Open(directory.Deps{Datastore: store, Self: self}, directory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	in, err := federation.NewIntake(federation.IntakeDeps{Directory: dir, Self: self,
		Validator: lmosdht.ThingValidator{Cache: lmosdht.NewRecordCache(0)}})
	if err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, b.N)
	now := time.Now()
	for i := range raws {
		p := pubs[i%len(pubs)]
		td := testnet.TD(b, testnet.UniqueID(b), fmt.Sprintf("Scale %d", i), "scale-capability", "scale-other")
		rec, err := lmosproto.SignThing(td, p.key, now)
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = rec.Raw
	}
	b.ResetTimer()
	for i, raw := range raws {
		rec, err := in.Check(pubs[i%len(pubs)].id, raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := in.Store("gossip", rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	beat, err := json.Marshal(struct {
		Peer string    `json:"peer"`
		At   time.Time `json:"at"`
	}{self.String(), now})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(raws[0])), "record-bytes")
	b.ReportMetric(float64(len(beat)), "beat-bytes")
}

// bnTraffic is a gossipsub tracer that counts what one node sends on the
// announce topic: the messages (copies and bytes, and the bytes of the
// message envelope around the data) and the gossip control traffic about
// them (IHAVE for the topic, IWANT and IDONTWANT, which name no topic: the
// benchmark's network carries nothing else that gossip announces).
type bnTraffic struct {
	*testnet.Tracer
	mu                                     sync.Mutex
	copies, msgBytes, dataBytes, ctrlBytes int
}

func (t *bnTraffic) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range rpc.GetPublish() {
		if m.GetTopic() == lmosproto.TopicAnnounce {
			t.copies++
			t.msgBytes += m.Size()
			t.dataBytes += len(m.GetData())
		}
	}
	c := rpc.GetControl()
	for _, ih := range c.GetIhave() {
		if ih.GetTopicID() == lmosproto.TopicAnnounce {
			t.ctrlBytes += ih.Size()
		}
	}
	for _, iw := range c.GetIwant() {
		t.ctrlBytes += iw.Size()
	}
	for _, dw := range c.GetIdontwant() {
		t.ctrlBytes += dw.Size()
	}
}

// BenchmarkAnnounceTraffic measures the gossip traffic of one announcement
// per node (docs/performance.md, "At internet scale, on paper"): 16 nodes,
// each linked to the 4 next ones on a ring (8 links each, so that
// gossipsub's mesh has its default degree D = 6), one publishes a Thing per
// iteration; once every node has it, the benchmark waits 4 heartbeats for
// the IHAVE gossip about it. It reports, per announcement and node, the
// copies sent and the bytes sent (messages and control), and the bytes of
// a message's envelope around its data.
func BenchmarkAnnounceTraffic(b *testing.B) {
	const n, next = 16, 4
	tracers := make([]*bnTraffic, n)
	for i := range tracers {
		tracers[i] = &bnTraffic{Tracer: new(testnet.Tracer)}
	}
	net := testnet.New(b, n, testnet.Options{
		NodeOptions: func(i int) []node.Option { return []node.Option{node.WithPubSubTracer(tracers[i])} },
	})
	for i := range n {
		for d := 1; d <= next; d++ {
			a, c := net.Nodes[i], net.Nodes[(i+d)%n]
			if a.Host().Network().Connectedness(c.PeerID()) == network.Connected {
				continue // the other one dialled first (its DHT)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := a.Host().Connect(ctx, peer.AddrInfo{ID: c.PeerID(), Addrs: c.Host().Addrs()})
			cancel()
			// A dial that lost a race with one the other way round is
			// refused (and backed off) though the two end up connected.
			if err != nil {
				bnWait(b, "the link "+strconv.Itoa(i)+"–"+strconv.Itoa((i+d)%n), func() bool {
					return a.Host().Network().Connectedness(c.PeerID()) == network.Connected
				})
			}
		}
	}
	bnWait(b, "topic peers", func() bool {
		for _, nd := range net.Nodes {
			if len(nd.PubSub().ListPeers(lmosproto.TopicAnnounce)) < 2*next {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second) // heartbeats graft the meshes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := net.Nodes[0]
	count := func() (copies, msgBytes, dataBytes, ctrlBytes int) {
		for _, t := range tracers {
			t.mu.Lock()
			copies, msgBytes, dataBytes, ctrlBytes = copies+t.copies, msgBytes+t.msgBytes, dataBytes+t.dataBytes, ctrlBytes+t.ctrlBytes
			t.mu.Unlock()
		}
		return
	}
	c0, m0, d0, x0 := count()
	published := 0
	for b.Loop() {
		id := testnet.UniqueID(b)
		if _, _, err := pub.Federation().Publish(ctx, testnet.TD(b, id, "Traffic", "traffic-capability"), nil); err != nil {
			b.Fatal(err)
		}
		published++
		bnWait(b, "the Thing on every node", func() bool {
			for _, nd := range net.Nodes {
				if _, ok := nd.Directory().Latest(pub.PeerID(), id); !ok {
					return false
				}
			}
			return true
		})
	}
	b.StopTimer()
	time.Sleep(4 * time.Second) // IHAVE gossip of the last ones
	c1, m1, d1, x1 := count()
	per := float64(published * n)
	b.ReportMetric(float64(c1-c0)/per, "copies/ann/node")
	b.ReportMetric(float64(m1-m0)/per, "msg-B/ann/node")
	b.ReportMetric(float64(x1-x0)/per, "ctrl-B/ann/node")
	b.ReportMetric(float64((m1-m0)-(d1-d0))/float64(c1-c0), "envelope-B")
}

// BenchmarkOwnThingHeap measures what an own Thing costs a node's heap:
// one node, not linked, publishes n Things shaped as the scale lab's (an
// lmos:Agent of one capability, no interactions; docs/lab.md), and the
// live heap after two GCs (runtime.MemStats.HeapAlloc) is read before and
// after. It reports the difference per Thing: the signed record, the
// directory's entry, the record cache's copy (a fixed cost once the cache
// is full), the publication's DHT queue, and whatever else the node keeps
// of it. The scale lab's light-node target allows this much per Thing a
// node serves (docs/performance.md).
func BenchmarkOwnThingHeap(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(fmt.Sprintf("things=%d", n), func(b *testing.B) {
			var perThing float64
			for b.Loop() {
				perThing = ownThingHeap(b, n)
			}
			b.ReportMetric(perThing, "live-B/Thing")
		})
	}
}

func ownThingHeap(b *testing.B, n int) float64 {
	nd := testnet.New(b, 1, testnet.Options{}).Nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	time.Sleep(time.Second) // the node's start settles
	before := liveHeap()
	for i := range n {
		td, err := lmosproto.ParseTD(fmt.Appendf(nil, `{
			"@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
			"@type": "lmos:Agent", "id": "urn:lmos:heap:%d", "title": "Heap %d",
			"securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
			"lmos:metadata": {"lmos:vendor": {"lmos:name": "heap bench"}},
			"lmos:capabilities": [{"lmos:id": "heap-cap-%d", "lmos:version": "1.0.0"}]}`, i, i, i%2))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := nd.Things().Publish(ctx, td, nil); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(time.Second) // publication's background work
	return float64(liveHeap()-before) / float64(n)
}

// liveHeap is the process's heap allocated after two GCs: its live heap.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
