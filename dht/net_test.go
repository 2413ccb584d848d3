package dht

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/multiformats/go-base32"
	protobuf "google.golang.org/protobuf/proto"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

// newHost starts a libp2p host that listens on 127.0.0.1 only, over TCP
// only, without relay or metrics, and is closed when the test ends.
func newHost(t *testing.T, gater *loopback.Gater) host.Host {
	t.Helper()
	h, err := libp2p.New(
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.ConnectionGater(gater),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// testNode is a host with its DHT and the datastore the DHT keeps its
// records in.
type testNode struct {
	host  host.Host
	dht   *kaddht.IpfsDHT
	store ds.Batching

	mu   sync.Mutex
	puts map[string]int // PUT_VALUE requests received, by record key
}

// newNode starts a host and a DHT configured by Options(p) plus extra, both
// closed when the test ends (the DHT first). p.Datastore is set to a fresh
// in-memory store.
func newNode(t *testing.T, gater *loopback.Gater, p Params, extra ...kaddht.Option) *testNode {
	t.Helper()
	n := &testNode{
		host:  newHost(t, gater),
		store: dssync.MutexWrap(ds.NewMapDatastore()),
		puts:  make(map[string]int),
	}
	p.Datastore = n.store
	opts, err := Options(p)
	if err != nil {
		t.Fatal(err)
	}
	hook := kaddht.OnRequestHook(func(_ context.Context, _ network.Stream, req *dhtpb.Message) {
		if req.GetType() == dhtpb.Message_PUT_VALUE {
			n.mu.Lock()
			n.puts[string(req.GetKey())]++
			n.mu.Unlock()
		}
	})
	n.dht, err = kaddht.New(context.Background(), n.host, append(append(opts, hook), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.dht.Close() })
	return n
}

// putsOf returns how many PUT_VALUE requests for key the node received.
func (n *testNode) putsOf(key string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.puts[key]
}

// stored returns the values this node's DHT keeps in its datastore, by
// record key. It reads kad-dht's storage layout (records under
// DatastorePrefix + "/" + base32(key), provider records under
// "/providers"), so it also checks that Options put the DHT below
// DatastorePrefix.
func (n *testNode) stored(t *testing.T) map[string][]byte {
	t.Helper()
	res, err := n.store.Query(context.Background(), dsq.Query{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := res.Rest()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Key, DatastorePrefix+"/")
		if !ok {
			t.Fatalf("datastore key %q outside %s", e.Key, DatastorePrefix)
		}
		if strings.HasPrefix(rest, "providers/") {
			continue
		}
		key, err := base32.RawStdEncoding.DecodeString(rest)
		if err != nil {
			t.Fatalf("datastore key %q: %v", e.Key, err)
		}
		var rec recpb.Record
		if err := protobuf.Unmarshal(e.Value, &rec); err != nil {
			t.Fatalf("datastore value at %q: %v", e.Key, err)
		}
		if string(rec.GetKey()) != string(key) {
			t.Fatalf("datastore key %q holds the record of %q", key, rec.GetKey())
		}
		out[string(key)] = rec.GetValue()
	}
	return out
}

// connect connects a to b.
func connect(t *testing.T, a, b *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: b.host.ID(), Addrs: b.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
