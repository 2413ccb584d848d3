package node_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const (
	netSize = 20
	// waitLong is the deadline of a wait for the network to converge: a
	// bound for a hung test, not a speed requirement.
	waitLong = 30 * time.Second
)

// has reports whether n's directory holds (publisher, id) at seq exactly,
// live or (tombstone) removed.
func has(publisher peer.ID, id string, seq uint64, tombstone bool) func(*node.Node) bool {
	return func(n *node.Node) bool {
		e, ok := n.Directory().Latest(publisher, id)
		return ok && e.Seq == seq && e.Tombstone == tombstone
	}
}

// TestFederation runs one network of netSize nodes (a ring with a few
// chords) through the life of a Thing (the attacks on it are in
// TestAdversarial).
func TestFederation(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	tracers := make([]*testnet.Tracer, netSize)
	for i := range tracers {
		tracers[i] = &testnet.Tracer{}
	}
	start := time.Now()
	net := testnet.New(t, netSize, testnet.Options{
		NodeOptions: func(i int) []node.Option {
			opts := []node.Option{node.WithGossipHeartbeat(200 * time.Millisecond)}
			if i < len(tracers) {
				opts = append(opts, node.WithPubSubTracer(tracers[i]))
			}
			return opts
		},
	})
	net.Ring()
	chords := net.Chords(5, 1)
	nodes := net.Nodes
	t.Logf("%d nodes up and linked (ring + chords %v) in %s", netSize, chords, time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Meshes need a moment to form; publishing before they have is fine
	// (the publisher floods to its topic peers) but the topic peers must
	// at least know each other's subscriptions.
	testnet.WaitFor(t, "every node sees a topic peer", waitLong, testnet.All(nodes, func(n *node.Node) bool {
		return len(n.PubSub().ListPeers(lmosproto.TopicAnnounce)) > 0
	}))

	alice := nodes[3]
	id := testnet.UniqueID(t)
	capability := "weather-forecast-" + id[len(id)-6:]

	t.Run("publish reaches every node", func(t *testing.T) {
		begin := time.Now()
		e, change, err := alice.Federation().Publish(ctx, testnet.TD(t, id, "Weather", capability), &directory.Local{Backend: "http://127.0.0.1:1/weather"})
		if err != nil {
			t.Fatal(err)
		}
		if change != directory.Created || e.Seq != 1 || !e.Own {
			t.Fatalf("Publish: change %s, seq %d, own %v; want created, 1, own", change, e.Seq, e.Own)
		}
		d := testnet.WaitFor(t, "seq 1 on every node", waitLong, testnet.All(nodes, has(alice.PeerID(), id, 1, false)))
		t.Logf("publish → visible on all %d nodes: %s (Publish itself: %s)", netSize, d.Round(time.Millisecond), time.Since(begin)-d)
		// A learned copy is the signed record, verified, with its TD.
		got, _ := nodes[13].Directory().Get(alice.PeerID(), id)
		td, err := got.TD()
		if err != nil || td.Title != "Weather" || got.Own {
			t.Fatalf("node 13: TD %v, err %v, own %v", td, err, got.Own)
		}
	})

	t.Run("update reaches every node", func(t *testing.T) {
		td := testnet.TD(t, id, "Weather v2", capability)
		e, change, err := alice.Federation().Publish(ctx, td, nil)
		if err != nil {
			t.Fatal(err)
		}
		if change != directory.Updated || e.Seq != 2 {
			t.Fatalf("Publish: change %s, seq %d; want updated, 2", change, e.Seq)
		}
		d := testnet.WaitFor(t, "seq 2 on every node", waitLong, testnet.All(nodes, has(alice.PeerID(), id, 2, false)))
		t.Logf("update → visible on all %d nodes: %s", netSize, d.Round(time.Millisecond))
		if own, _ := alice.Directory().Get(alice.PeerID(), id); own.Local.Backend == "" {
			t.Error("an update without Local dropped the Thing's backend")
		}
	})

	t.Run("late joiner converges by sync", func(t *testing.T) {
		// Gossip off: the only way it can learn the Thing is sync.
		late := lateNode(t, func(cfg *config.Config) { cfg.Gossip = false })
		if late.Directory().Len() != 0 {
			t.Fatal("a new node's directory is not empty")
		}
		testnet.Connect(t, late, nodes[10])
		d := testnet.WaitFor(t, "late joiner has seq 2", waitLong, testnet.All([]*node.Node{late}, has(alice.PeerID(), id, 2, false)))
		// Sync carries a peer's own records only, so the Thing came from
		// Alice herself: the late joiner met her through the DHT (its
		// routing table refresh dials the peers closest to it).
		t.Logf("late joiner converged in %s, connected to %d peers", d.Round(time.Millisecond), len(late.Host().Network().Peers()))
	})

	t.Run("cold node finds a capability through the DHT alone", func(t *testing.T) {
		cold := lateNode(t, func(cfg *config.Config) {
			cfg.Gossip = false
			cfg.SyncOnConnect = false
		})
		testnet.Connect(t, cold, nodes[15])
		var entries []directory.Entry
		d := testnet.WaitFor(t, "FindCapability on the cold node", waitLong, func() (bool, string) {
			var err error
			lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
			defer lcancel()
			entries, err = cold.Federation().FindCapability(lctx, capability)
			if err != nil {
				return false, err.Error()
			}
			return len(entries) == 1, "no provider found yet"
		})
		t.Logf("cold lookup found the capability after %s", d.Round(time.Millisecond))
		e := entries[0]
		if e.Publisher != alice.PeerID() || e.ThingID != id || e.Seq != 2 || e.Own {
			t.Fatalf("found %s/%s seq %d own %v", e.Publisher, e.ThingID, e.Seq, e.Own)
		}
		rec, err := e.Record()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lmosproto.ParseRecord(rec.Raw); err != nil {
			t.Fatalf("the record found does not verify: %v", err)
		}
		if e.Expires.IsZero() {
			t.Error("a Thing learned by a cold lookup never expires")
		}

		// By key: a second Thing, published by another node, read from the
		// DHT value record.
		bob := nodes[7]
		bid := testnet.UniqueID(t)
		if _, _, err := bob.Federation().Publish(ctx, testnet.TD(t, bid, "Geocoder", "geocode"), nil); err != nil {
			t.Fatal(err)
		}
		testnet.WaitFor(t, "FetchThing on the cold node", waitLong, func() (bool, string) {
			lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
			defer lcancel()
			e, err := cold.Federation().FetchThing(lctx, bob.PeerID(), bid)
			if err != nil {
				return false, err.Error()
			}
			return e.Seq == 1, "wrong seq"
		})
		if _, err := cold.Federation().FetchThing(ctx, bob.PeerID(), testnet.UniqueID(t)); !errors.Is(err, federation.ErrNotFound) {
			t.Errorf("FetchThing of an unknown Thing: %v, want ErrNotFound", err)
		}
	})

	t.Run("tombstone reaches every node", func(t *testing.T) {
		if err := alice.Federation().Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
		d := testnet.WaitFor(t, "tombstone on every node", waitLong, testnet.All(nodes, has(alice.PeerID(), id, 3, true)))
		t.Logf("tombstone → visible on all %d nodes: %s", netSize, d.Round(time.Millisecond))
		if _, ok := nodes[9].Directory().Get(alice.PeerID(), id); ok {
			t.Error("a removed Thing is still live")
		}
		if err := alice.Federation().Remove(ctx, id); !errors.Is(err, federation.ErrNotFound) {
			t.Errorf("second Remove: %v, want ErrNotFound", err)
		}
	})
}

func isNode(nodes []*node.Node, p peer.ID) bool {
	for _, n := range nodes {
		if n.PeerID() == p {
			return true
		}
	}
	return false
}

// lateNode starts one more test node, unlinked, configured by configure.
func lateNode(t *testing.T, configure func(*config.Config)) *node.Node {
	t.Helper()
	return testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { configure(cfg) }}).Nodes[0]
}

func reasons(vs []testnet.Verdict) string {
	var b bytes.Buffer
	for _, v := range vs {
		b.WriteString(v.Reason)
		b.WriteString("; ")
	}
	return b.String()
}

// hostile is a peer that follows no rule: a bare libp2p host on loopback
// with a gossipsub that validates nothing (so it publishes whatever it is
// told) and a DHT server that accepts any record (Things and group logs).
type hostile struct {
	id    peer.ID
	key   ed25519.PrivateKey
	host  host.Host
	topic *pubsub.Topic
	dht   *kaddht.IpfsDHT
}

type permissive struct{}

func (permissive) Validate(string, []byte) error        { return nil }
func (permissive) Select(string, [][]byte) (int, error) { return 0, nil }

func newHostile(t *testing.T, peers ...*node.Node) *hostile {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	key, err := homedir.SigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageIdFn(func(m *pubsubpb.Message) string { s := sha256.Sum256(m.GetData()); return string(s[:]) }),
		pubsub.WithFloodPublish(true), pubsub.WithMaxMessageSize(2*lmosproto.MaxRecordSize))
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(lmosproto.TopicAnnounce)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := topic.Relay()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay)
	d, err := kaddht.New(ctx, h, kaddht.ProtocolPrefix(lmosproto.ProtocolPrefix), kaddht.Mode(kaddht.ModeServer),
		kaddht.Validator(record.NamespacedValidator{lmosproto.NamespaceThing: permissive{}, lmosproto.NamespaceGroup: permissive{}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, n := range peers {
		if err := h.Connect(ctx, peer.AddrInfo{ID: n.PeerID(), Addrs: n.Host().Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	// Until the hostile peer knows a victim's subscription, gossipsub
	// would not send it the message.
	testnet.WaitFor(t, "hostile's topic peers", waitLong, func() (bool, string) {
		known := topic.ListPeers()
		for _, n := range peers {
			if !slices.Contains(known, n.PeerID()) {
				return false, "victim's subscription not known yet"
			}
		}
		return true, ""
	})
	return &hostile{id: h.ID(), key: key, host: h, topic: topic, dht: d}
}

func (h *hostile) publish(t *testing.T, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.topic.Publish(ctx, data); err != nil {
		t.Fatalf("hostile publish: %v", err)
	}
}

// sign signs a test TD of the hostile peer's own.
func (h *hostile) sign(t *testing.T, id string, seq uint64, at time.Time) *lmosproto.Record {
	t.Helper()
	td := testnet.TD(t, id, "Hostile", "hostile")
	td.Seq = seq
	rec, err := lmosproto.SignThing(td, h.key, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestPublishBeforePeers: a node that published while alone gets its Thing
// to the network once it has peers: by gossip (it republishes when the
// first peer joins the announce topic) and into the DHT (the republication
// queues the record again at once).
func TestPublishBeforePeers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bobTracer := &testnet.Tracer{}
	net := testnet.New(t, 2, testnet.Options{
		// Bob does not sync on connect: gossip alone must bring the Thing.
		Configure:   func(i int, cfg *config.Config) { cfg.SyncOnConnect = i == 0 },
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithPubSubTracer(bobTracer)} },
	})
	defer func() {
		if t.Failed() {
			t.Logf("Bob's gossipsub: received %d, delivered %d, duplicates %d, refused %v", bobTracer.Received(), bobTracer.Delivered(), bobTracer.Duplicates(), bobTracer.Refused())
		}
	}()
	alice, bob := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	capability := "lonely-" + id[len(id)-6:]
	if _, _, err := alice.Federation().Publish(ctx, testnet.TD(t, id, "Lonely", capability), nil); err != nil {
		t.Fatal(err)
	}
	net.Link(1, 0)
	testnet.WaitFor(t, "Bob has Alice's Thing by gossip", waitLong, testnet.All([]*node.Node{bob}, has(alice.PeerID(), id, 1, false)))

	// A cold node that knows only Bob finds the capability in the DHT.
	cold := lateNode(t, func(cfg *config.Config) { cfg.Gossip, cfg.SyncOnConnect = false, false })
	testnet.Connect(t, cold, bob)
	testnet.WaitFor(t, "cold lookup", waitLong, func() (bool, string) {
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		defer lcancel()
		found, err := cold.Federation().FindCapability(lctx, capability)
		if err != nil {
			return false, err.Error()
		}
		return len(found) == 1 && found[0].Publisher == alice.PeerID(), "not found yet"
	})
}

// TestRestartKeepsAndRepublishes: a node restarted on its home still has
// its own Things, and a peer that meets it afterwards learns them.
func TestRestartKeepsAndRepublishes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testnet.Config(t)
	first, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	id := testnet.UniqueID(t)
	if _, _, err := first.Federation().Publish(ctx, testnet.TD(t, id, "Durable", "durable"), nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	if err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if e, ok := again.Directory().Get(again.PeerID(), id); !ok || !e.Own || e.Seq != 1 {
		t.Fatalf("after restart: held %v, own %v, seq %d", ok, e.Own, e.Seq)
	}
	peerNode := lateNode(t, func(*config.Config) {})
	testnet.Connect(t, peerNode, again)
	testnet.WaitFor(t, "peer learns the restarted node's Thing", waitLong, testnet.All([]*node.Node{peerNode}, has(again.PeerID(), id, 1, false)))
}
