package node_test

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// BenchmarkHostileLookup is issue 24's hostile lab (not in the default
// suite: run it with -bench HostileLookup -benchtime Nx). A network of 20
// nodes on 127.0.0.1 of which 10, 30 or 50 % are sybils: bare hosts with a
// kad-dht server that drops the provider records it is given and answers
// every GET_PROVIDERS with the sybils only ("plain"), or with the sybils
// and made-up unreachable providers up to federation.MaxProviders
// ("fill"), and that answer /lmos/sync with their own Thing and /lmos/find
// with all the sybils' Things, each offering the capability. Five honest
// nodes provide the capability. Each sample is a fresh cold node (gossip
// and sync on connect off, DHT client) that joins through a random node
// (honest or sybil) and looks the capability up once per variant; it
// reports the share of lookups that found at least one honest provider
// (ok-%) and all five (all-%).
func BenchmarkHostileLookup(b *testing.B) {
	for _, pct := range []int{10, 30, 50} {
		b.Run(fmt.Sprintf("hostile=%d%%", pct), func(b *testing.B) { bnHostileLookup(b, 20, pct) })
	}
}

func bnHostileLookup(b *testing.B, total, pct int) {
	const publishers = 5
	nSybils := total * pct / 100
	net := testnet.New(b, total-nSybils, testnet.Options{})
	bnTopology(net)
	capability := "bench-eclipse-" + testnet.UniqueID(b)[len("urn:lmos:test:"):]
	store := &bnSybilStore{}
	sybils := make([]*bnSybil, nSybils)
	for i := range sybils {
		sybils[i] = bnNewSybil(b, store, capability)
		for _, j := range rand.Perm(len(net.Nodes))[:3] {
			bnConnect(b, sybils[i].h, net.Nodes[j].Host())
		}
	}
	var all [][]byte
	var provs []peer.AddrInfo
	for _, s := range sybils {
		provs = append(provs, peer.AddrInfo{ID: s.h.ID(), Addrs: s.h.Addrs()})
		all = append(all, s.rec)
	}
	store.mu.Lock()
	store.provs = provs
	store.mu.Unlock()
	for _, s := range sybils {
		s.all = all[:min(len(all), federation.MaxFindRecords)]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pubs []peer.ID
	for k := range publishers {
		nd := net.Nodes[1+k*len(net.Nodes)/publishers]
		pubs = append(pubs, nd.PeerID())
		if _, _, err := nd.Federation().Publish(ctx, testnet.TD(b, testnet.UniqueID(b), "Honest "+fmt.Sprint(k), capability), nil); err != nil {
			b.Fatal(err)
		}
	}
	// Each publisher's provider record is on an honest node (those sent
	// to sybils are dropped).
	key := lmosdht.CapabilityCID(capability)
	bnWait(b, "provider records on honest nodes", func() bool {
		held := map[peer.ID]bool{}
		for _, n := range net.Nodes {
			ps, _ := n.DHT().ProviderStore().GetProviders(ctx, key.Hash())
			for _, p := range ps {
				held[p.ID] = true
			}
		}
		for _, p := range pubs {
			if !held[p] {
				return false
			}
		}
		return true
	})

	type tally struct{ n, ok, all, viaSybil, viaSybilOK int }
	res := map[bool]*tally{false: {}, true: {}}
	for b.Loop() {
		var entry host.Host
		i := rand.IntN(total)
		if i < nSybils {
			entry = sybils[i].h
		} else {
			entry = net.Nodes[i-nSybils].Host()
		}
		for _, fill := range []bool{false, true} {
			store.setFill(fill)
			cold := bnColdNode(b)
			bnConnect(b, cold.Host(), entry)
			bnWait(b, "cold node's routing table", func() bool { return cold.DHT().RoutingTable().Size() > 0 })
			lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
			found, _ := cold.Federation().FindCapability(lctx, capability)
			lcancel()
			honest := map[peer.ID]bool{}
			for _, e := range found {
				if slices.Contains(pubs, e.Publisher) {
					honest[e.Publisher] = true
				}
			}
			t := res[fill]
			t.n++
			if len(honest) > 0 {
				t.ok++
			}
			if i < nSybils {
				t.viaSybil++
				if len(honest) > 0 {
					t.viaSybilOK++
				}
			}
			if len(honest) == publishers {
				t.all++
			}
			if err := cold.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	for _, fill := range []bool{false, true} {
		t, name := res[fill], "plain"
		if fill {
			name = "fill"
		}
		b.ReportMetric(100*float64(t.ok)/float64(max(t.n, 1)), name+"-ok-%")
		b.ReportMetric(100*float64(t.all)/float64(max(t.n, 1)), name+"-all-%")
		b.Logf("%d%% hostile (%d of %d), %s: %d lookups, %d found an honest provider, %d all %d; %d joined through a sybil, %d of them found an honest provider",
			pct, nSybils, total, name, t.n, t.ok, t.all, publishers, t.viaSybil, t.viaSybilOK)
	}
}

// bnSybilStore is the sybils' shared provider store: it keeps nothing
// it is given and names the sybils (and, with fill, made-up providers up
// to federation.MaxProviders) as the providers of every key.
type bnSybilStore struct {
	mu    sync.Mutex
	provs []peer.AddrInfo
	fill  []peer.AddrInfo
	full  bool
}

func (s *bnSybilStore) setFill(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.full = on
	if on && s.fill == nil {
		dead := ma.StringCast("/ip4/127.0.0.1/tcp/1")
		for range federation.MaxProviders {
			priv, _, err := crypto.GenerateEd25519Key(crand.Reader)
			if err != nil {
				panic(err) // crypto/rand does not fail
			}
			id, err := peer.IDFromPrivateKey(priv)
			if err != nil {
				panic(err)
			}
			s.fill = append(s.fill, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{dead}})
		}
	}
}

func (s *bnSybilStore) AddProvider(context.Context, []byte, peer.AddrInfo) error { return nil }

func (s *bnSybilStore) GetProviders(context.Context, []byte) ([]peer.AddrInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.provs)
	if s.full {
		out = append(out, s.fill[:max(0, federation.MaxProviders-len(out))]...)
	}
	return out, nil
}

func (s *bnSybilStore) Close() error { return nil }

// bnSybil is one sybil: a host with the sybils' DHT server, its own
// signed Thing (rec) and the sybils' Things it serves over find (all).
type bnSybil struct {
	h   host.Host
	rec []byte
	all [][]byte
}

func bnNewSybil(b *testing.B, store *bnSybilStore, capability string) *bnSybil {
	b.Helper()
	priv, _, err := crypto.GenerateEd25519Key(crand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	d, err := kaddht.New(context.Background(), h, kaddht.ProtocolPrefix(lmosproto.ProtocolPrefix), kaddht.Mode(kaddht.ModeServer),
		kaddht.Validator(record.NamespacedValidator{lmosproto.NamespaceThing: permissive{}, lmosproto.NamespaceGroup: permissive{}}),
		kaddht.ProviderStore(store))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	key, err := homedir.SigningKey(priv)
	if err != nil {
		b.Fatal(err)
	}
	td := testnet.TD(b, testnet.UniqueID(b), "Sybil", capability)
	td.Seq = 1
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	s := &bnSybil{h: h, rec: rec.Raw}
	h.SetStreamHandler(lmosproto.ProtocolSync, bnServe(func() [][]byte { return [][]byte{s.rec} }))
	h.SetStreamHandler(lmosproto.ProtocolFind, bnServe(func() [][]byte { return s.all }))
	return s
}

// bnServe answers one request of the sync or find protocol with recs.
func bnServe(recs func() [][]byte) network.StreamHandler {
	return func(s network.Stream) {
		defer s.Close()
		if _, err := lmosproto.ReadFrame(s, 4096); err != nil {
			_ = s.Reset()
			return
		}
		rs := recs()
		hdr, err := json.Marshal(map[string]int{"count": len(rs)})
		if err != nil || lmosproto.WriteFrame(s, hdr) != nil {
			return
		}
		for _, r := range rs {
			if lmosproto.WriteFrame(s, r) != nil {
				return
			}
		}
	}
}
