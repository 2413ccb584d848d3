package p2p

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// routingRecorder is a content router that records what is provided and
// answers lookups from a table: the DHT's side of ShardDiscovery.
type routingRecorder struct {
	mu        sync.Mutex
	provided  map[cid.Cid]bool
	looked    map[cid.Cid]bool
	providers map[cid.Cid][]peer.AddrInfo
}

func (r *routingRecorder) Provide(_ context.Context, c cid.Cid, _ bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.provided[c] = true
	return nil
}

func (r *routingRecorder) FindProvidersAsync(_ context.Context, c cid.Cid, _ int) <-chan peer.AddrInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.looked[c] = true
	ch := make(chan peer.AddrInfo, len(r.providers[c]))
	for _, ai := range r.providers[c] {
		ch <- ai
	}
	close(ch)
	return ch
}

func (r *routingRecorder) saw(m map[cid.Cid]bool, c cid.Cid) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m[c]
}

// topicCID is the key gossipsub's discovery advertises topic under.
func topicCID(t *testing.T, topic string) cid.Cid {
	h, err := mh.Sum([]byte("floodsub:"+topic), mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

type allowAll struct{}

func (allowAll) PeerFilter(peer.ID, string) bool { return true }
func (allowAll) SubscriptionFilter() pubsub.SubscriptionFilter {
	return pubsub.NewRegexpSubscriptionFilter(regexp.MustCompile(".*"))
}

// TestShardDiscovery: a node that joins an announce shard advertises it
// in the DHT and dials the shard's providers it finds there, a peer it
// had no connection to; a group topic is neither advertised nor looked
// up.
func TestShardDiscovery(t *testing.T) {
	newHost := func() peer.AddrInfo {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}
	}
	other := newHost()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })

	shard, group := lmosproto.TopicShardPrefix+"3", lmosproto.TopicGroupPrefix+"g1"
	r := &routingRecorder{provided: map[cid.Cid]bool{}, looked: map[cid.Cid]bool{},
		providers: map[cid.Cid][]peer.AddrInfo{topicCID(t, shard): {other}, topicCID(t, group): {other}}}
	disc, err := ShardDiscovery(r, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ps, err := NewPubSub(ctx, h, PubSubOptions{Groups: allowAll{}, Discovery: disc})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{group, shard} {
		tp, err := ps.Join(topic)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := tp.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Cancel)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !r.saw(r.provided, topicCID(t, shard)) || h.Network().Connectedness(other.ID) != network.Connected {
		if time.Now().After(deadline) {
			t.Fatalf("after joining %s: advertised %v, connected to its provider %v", shard,
				r.saw(r.provided, topicCID(t, shard)), h.Network().Connectedness(other.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.saw(r.provided, topicCID(t, group)) || r.saw(r.looked, topicCID(t, group)) {
		t.Errorf("group topic %s: advertised %v, looked up %v; want neither", group,
			r.saw(r.provided, topicCID(t, group)), r.saw(r.looked, topicCID(t, group)))
	}
}
