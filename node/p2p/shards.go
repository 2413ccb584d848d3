package p2p

import (
	"context"
	"log/slog"
	"math/rand"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	routingdisc "github.com/libp2p/go-libp2p/p2p/discovery/routing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Finding the other peers of an announce shard.
//
// A node joins the shards of what it publishes and looks up, and
// gossipsub meshes a shard only among the peers a node is connected to.
// A node's discovery stops dialling at 64 peers (discovery.maxPeers), so
// in a federation of thousands a shard's subscribers are not all linked
// through each other: with 16 shards, and nodes whose Things are in 2 of
// them, a node has ~8 connected peers in each of its shards (one node in
// three thousand none); with 256 shards, 0.5 (most none). So gossipsub
// is given a discovery (pubsub.WithDiscovery) that advertises each shard
// a node subscribes to as a provider record in the LMOS DHT, and looks
// the shard's providers up while the node has fewer than gossipsub's Dlo
// mesh peers in it; the peers found are dialled (with gossipsub's
// per-peer backoff) and join the mesh. Nothing else is advertised: a
// group topic names its group, which stays private, and the v1 topics
// are held together by the node's rendezvous namespace.

// Shard lookups: the first at once, then cached for a minute, doubling
// to at most half an hour. A new subscriber finds the old ones (and they
// it, when it dials them), so repeating the lookup finds only latecomers
// and peers that came back.
const (
	shardLookupMin = time.Minute
	shardLookupMax = 30 * time.Minute
)

// notAdvertised is what a topic that is not advertised waits before
// gossipsub asks again; advertiseRetry what a shard waits after its
// advertisement failed (as it does while the DHT has no peers).
const (
	notAdvertised  = 24 * time.Hour
	advertiseRetry = 30 * time.Second
)

// ShardDiscovery is the discovery gossipsub is given (PubSubOptions): it
// advertises and looks up the announce shards through r, the LMOS DHT,
// and nothing else. A failed advertisement is logged to log at debug and
// tried again: a node alone, or still joining, has no DHT peer to store
// it (gossipsub would warn, and retry only after two minutes).
func ShardDiscovery(r routing.ContentRouting, log *slog.Logger) (discovery.Discovery, error) {
	cached, err := backoff.NewBackoffDiscovery(routingdisc.NewRoutingDiscovery(r),
		backoff.NewExponentialBackoff(shardLookupMin, shardLookupMax, backoff.FullJitter,
			shardLookupMin, 2, 0, rand.NewSource(time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	return shardsOnly{cached, log}, nil
}

// shardsOnly passes on the advertisements and lookups of announce shards.
type shardsOnly struct {
	discovery.Discovery
	log *slog.Logger
}

// isShard reports whether ns names an announce shard: gossipsub's
// discovery prefixes a topic with "floodsub:".
func isShard(ns string) bool {
	return strings.HasPrefix(strings.TrimPrefix(ns, "floodsub:"), lmosproto.TopicShardPrefix)
}

func (d shardsOnly) Advertise(ctx context.Context, ns string, opts ...discovery.Option) (time.Duration, error) {
	if !isShard(ns) {
		return notAdvertised, nil
	}
	ttl, err := d.Discovery.Advertise(ctx, ns, opts...)
	if err != nil {
		d.log.Debug("shard advertisement failed", "topic", strings.TrimPrefix(ns, "floodsub:"), "retryIn", advertiseRetry, "err", err)
		return advertiseRetry, nil
	}
	return ttl, nil
}

func (d shardsOnly) FindPeers(ctx context.Context, ns string, opts ...discovery.Option) (<-chan peer.AddrInfo, error) {
	if !isShard(ns) {
		ch := make(chan peer.AddrInfo)
		close(ch)
		return ch, nil
	}
	return d.Discovery.FindPeers(ctx, ns, opts...)
}
