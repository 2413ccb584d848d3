package federation

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// rpcBytes is a gossipsub tracer that counts the bytes of the RPCs a node
// receives (messages and control).
type rpcBytes struct{ n atomic.Int64 }

func (r *rpcBytes) RecvRPC(rpc *pubsub.RPC)                  { r.n.Add(int64(rpc.Size())) }
func (r *rpcBytes) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (r *rpcBytes) OnClosedOutboundStream(peer.ID)           {}
func (r *rpcBytes) Join(string)                              {}
func (r *rpcBytes) Leave(string)                             {}
func (r *rpcBytes) Graft(peer.ID, string)                    {}
func (r *rpcBytes) Prune(peer.ID, string)                    {}
func (r *rpcBytes) ValidateMessage(*pubsub.Message)          {}
func (r *rpcBytes) DeliverMessage(*pubsub.Message)           {}
func (r *rpcBytes) RejectMessage(*pubsub.Message, string)    {}
func (r *rpcBytes) DuplicateMessage(*pubsub.Message)         {}
func (r *rpcBytes) ThrottlePeer(peer.ID)                     {}
func (r *rpcBytes) SendRPC(*pubsub.RPC, peer.ID)             {}
func (r *rpcBytes) DropRPC(*pubsub.RPC, peer.ID)             {}
func (r *rpcBytes) UndeliverableMessage(*pubsub.Message)     {}

// BenchmarkShardTraffic: 12 nodes, 4 of them publishing 500 Things each
// over 8 capabilities (2000 in all); one light node looked up one
// capability before. It reports what each node receives by gossip
// (bytes of RPCs, per node, the publishers left out), what the light
// user holds, and what a directory node holds: with every node on the v1
// topic, and with shards (the records in full, and every TD short).
//
//	go test -run '^$' -bench ShardTraffic -benchtime 1x ./node/federation
func BenchmarkShardTraffic(b *testing.B) {
	for _, mode := range []struct {
		name   string
		role   Role // of every node but the directory node
		budget int
	}{
		{"v1", RoleV1, 0},
		{"shards", RoleLight, 0},
		{"shards-short", RoleLight, -1},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				shardTraffic(b, mode.role, mode.budget)
			}
		})
	}
}

const (
	benchNodes      = 12
	benchPublishers = 4
	benchThings     = 2000
	benchCaps       = 8
)

func shardTraffic(b *testing.B, role Role, budget int) {
	ctx := context.Background()
	counters := make([]*rpcBytes, benchNodes)
	members := make([]*member, benchNodes)
	for k := range members {
		counters[k] = &rpcBytes{}
		r := role
		if k == benchNodes-1 && role != RoleV1 {
			r = RoleDirectory
		}
		members[k] = newMember(b, func(d *Deps, c *Config) {
			psCtx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			ps, err := pubsub.NewGossipSub(psCtx, d.Host, pubsub.WithFloodPublish(true),
				pubsub.WithMessageSignaturePolicy(pubsub.StrictSign), pubsub.WithRawTracer(counters[k]),
				pubsub.WithPeerOutboundQueueSize(128)) // as node/p2p
			if err != nil {
				b.Fatal(err)
			}
			d.PubSub, c.Role, c.ShortBudget = ps, r, budget
		})
	}
	for k := range members {
		for _, j := range []int{1, 3, 5} {
			if err := members[k].host.Connect(ctx, peer.AddrInfo{ID: members[(k+j)%benchNodes].id, Addrs: members[(k+j)%benchNodes].host.Addrs()}); err != nil {
				b.Fatal(err)
			}
		}
	}
	user, dir := members[benchPublishers], members[benchNodes-1]
	// The directory node fetches from every publisher: without a DHT to
	// find their addresses, it connects to them.
	for _, p := range members[:benchPublishers] {
		if err := dir.host.Connect(ctx, peer.AddrInfo{ID: p.id, Addrs: p.host.Addrs()}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := user.FindCapability(ctx, "cap-0"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second) // subscriptions and meshes settle
	for _, c := range counters {
		c.n.Store(0)
	}
	start := time.Now()
	for p := range benchPublishers {
		for i := range benchThings / benchPublishers {
			td := testTD(b, fmt.Sprintf("urn:lmos:bench:%d:%d", p, i), 1, fmt.Sprintf("cap-%d", i%benchCaps))
			if _, _, err := members[p].Publish(ctx, td, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	learned := func(m *member) int { return m.dir.Len() - len(m.dir.Own()) }
	// Converged, or nothing changed for 5 s (gossip lost what it lost:
	// the bench nodes do not sync on connect).
	last, lastChange := -1, time.Now()
	for time.Since(lastChange) < 5*time.Second {
		if now := learned(dir) + learned(user) + user.shorts.Len(); now != last {
			last, lastChange = now, time.Now()
		}
		if learned(dir) == benchThings && (role == RoleV1 || budget < 0 || learned(user) >= benchThings/benchCaps) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // gossip of the last messages
	var total int64
	for k := benchPublishers; k < benchNodes; k++ {
		total += counters[k].n.Load()
	}
	nodes := benchNodes - benchPublishers
	b.ReportMetric(float64(total)/float64(nodes)/1024, "KiB-in/node")
	b.ReportMetric(float64(counters[benchPublishers].n.Load())/1024, "KiB-in/user")
	b.ReportMetric(float64(counters[benchNodes-1].n.Load())/1024, "KiB-in/directory")
	b.ReportMetric(float64(learned(user)), "held/user")
	b.ReportMetric(float64(user.shorts.Len()), "shorts/user")
	b.ReportMetric(float64(learned(dir)), "held/directory")
	b.ReportMetric(time.Since(start).Seconds(), "s-to-converge")
}
