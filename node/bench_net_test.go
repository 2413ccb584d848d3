package node_test

// Benchmarks of the performance table (scripts/bench.sh) that need a
// network: row 1 (propagation), row 2 (cold discovery) and row 6 (node
// cost). Each measures lmosnode and its raw-stack baseline side by side in
// one run and reports both with benchtab.Print. They are macro benchmarks:
// every b.Loop iteration is one sample, so run them with -benchtime Nx.
// Everything listens on 127.0.0.1 only, with mDNS off and no bootstrap
// peers but the benchmark's own.

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/p2p"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// bnDeadline bounds every wait of these benchmarks: a bound for a hung
// run, not a speed requirement.
const bnDeadline = 60 * time.Second

// bnChords is how many random chords the benchmarks add to the ring of n
// nodes ("a ring plus a few random chords").
func bnChords(n int) int { return max(3, n/5) }

// bnLinks returns the links of a ring of n nodes plus bnChords(n) chords
// between random pairs that are not ring neighbours, drawn from a fixed
// seed (as testnet.Net.Chords draws them), so every run and both stacks
// get the same topology.
func bnLinks(n int) [][2]int {
	var links [][2]int
	for i := range n {
		if n > 1 && (n > 2 || i == 0) {
			links = append(links, [2]int{i, (i + 1) % n})
		}
	}
	if n < 4 {
		return links
	}
	const seed = 1
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[[2]int]bool)
	for chords := 0; chords < bnChords(n) && len(seen) < n*n; {
		i, j := rng.IntN(n), rng.IntN(n)
		if i > j {
			i, j = j, i
		}
		if d := j - i; d <= 1 || d == n-1 || seen[[2]int{i, j}] {
			seen[[2]int{i, j}] = true
			continue
		}
		seen[[2]int{i, j}] = true
		links = append(links, [2]int{i, j})
		chords++
	}
	return links
}

// bnTopology links net's nodes by bnLinks and returns the links.
func bnTopology(net *testnet.Net) [][2]int {
	links := bnLinks(len(net.Nodes))
	for _, l := range links {
		net.Link(l[0], l[1])
	}
	return links
}

// bnRawNet starts n raw hosts (with gossipsub if gossip) linked by
// bnLinks(n).
func bnRawNet(tb testing.TB, n int, gossip bool) []*bnRawHost {
	tb.Helper()
	raw := make([]*bnRawHost, n)
	for i := range raw {
		raw[i] = bnNewRawHost(tb, bnRawOpts{gossip: gossip, mode: kaddht.ModeServer})
	}
	for _, l := range bnLinks(n) {
		bnConnect(tb, raw[l[0]].h, raw[l[1]].h)
	}
	return raw
}

// bnPercentile returns the p-th percentile (0 < p ≤ 100, nearest rank) of
// ds in milliseconds.
func bnPercentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	rank = min(max(rank, 0), len(s)-1)
	return float64(s[rank]) / float64(time.Millisecond)
}

// bnRawHost is a raw libp2p host built like the node's (TCP, QUIC and
// WebSocket; Noise and TLS; yamux; no relay, no metrics), listening on
// 127.0.0.1 only, with a kad-dht speaking the node's protocol (/lmos) and
// optionally gossipsub with the node's message IDs and flood publishing:
// the raw stack lmosnode is compared against.
type bnRawHost struct {
	h      host.Host
	dht    *kaddht.IpfsDHT
	ps     *pubsub.PubSub
	topic  *pubsub.Topic
	sub    *pubsub.Subscription
	cancel context.CancelFunc
}

type bnRawOpts struct {
	gossip bool
	mode   kaddht.ModeOpt
}

func bnNewRawHost(tb testing.TB, o bnRawOpts) *bnRawHost {
	tb.Helper()
	priv, _, err := crypto.GenerateEd25519Key(crand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(libp2pquic.NewTransport),
		libp2p.Transport(websocket.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &bnRawHost{h: h, cancel: cancel}
	tb.Cleanup(r.close)
	if r.dht, err = kaddht.New(ctx, h, kaddht.ProtocolPrefix(lmosproto.ProtocolPrefix), kaddht.Mode(o.mode)); err != nil {
		tb.Fatal(err)
	}
	if !o.gossip {
		return r
	}
	r.ps, err = pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageIdFn(p2p.MessageID),
		pubsub.WithFloodPublish(true),
		pubsub.WithMaxMessageSize(lmosproto.MaxRecordSize+64<<10))
	if err != nil {
		tb.Fatal(err)
	}
	if r.topic, err = r.ps.Join("bench"); err != nil {
		tb.Fatal(err)
	}
	if r.sub, err = r.topic.Subscribe(); err != nil {
		tb.Fatal(err)
	}
	return r
}

func (r *bnRawHost) close() {
	if r.sub != nil {
		r.sub.Cancel()
	}
	if r.topic != nil {
		_ = r.topic.Close()
	}
	r.cancel()
	if r.dht != nil {
		_ = r.dht.Close()
	}
	_ = r.h.Close()
}

func bnConnect(tb testing.TB, a host.Host, b host.Host) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bnDeadline)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		tb.Fatalf("connect: %v", err)
	}
}

// bnWait polls cond every 5 ms until it holds and fails tb after
// bnDeadline.
func bnWait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(bnDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not after %s", what, bnDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bnArrival is one node receiving one message (raw) or Thing (lmosnode).
type bnArrival struct {
	node int
	key  string
	at   time.Time
}

// bnCollect waits until every one of n nodes reported key on arrivals and
// returns when the last did, relative to start.
func bnCollect(tb testing.TB, arrivals <-chan bnArrival, key string, n int, start time.Time) time.Duration {
	tb.Helper()
	seen := make(map[int]bool, n)
	var last time.Time
	timeout := time.After(bnDeadline)
	for len(seen) < n {
		select {
		case a := <-arrivals:
			if a.key != key || seen[a.node] {
				continue
			}
			seen[a.node] = true
			last = a.at
		case <-timeout:
			tb.Fatalf("%s: %d of %d nodes after %s", key[:min(len(key), 24)], len(seen), n, bnDeadline)
		}
	}
	return last.Sub(start)
}

// BenchmarkPropagation is row 1: a TD published on one node until it is in
// the directories of all N nodes, against raw gossipsub delivering a
// message of the same size to all N raw hosts. Both networks are a ring
// plus the same chords on loopback; the raw hosts run kad-dht too, because
// the nodes' DHT connects them to more peers than the links, and the raw
// network must grow the same way. The publisher rotates over the nodes;
// each iteration takes one sample of each.
func BenchmarkPropagation(b *testing.B) {
	for _, n := range []int{10, 25, 50} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { bnPropagation(b, n) })
	}
}

// bnPause follows each propagation sample, so that the next starts on a
// quiet network.
const bnPause = 150 * time.Millisecond

func bnPropagation(b *testing.B, n int) {
	net := testnet.New(b, n, testnet.Options{})
	links := bnTopology(net)
	raw := bnRawNet(b, n, true)

	// Every node and host knows a topic peer on each of its links, and
	// three heartbeats (1 s each, both sides) have grafted the meshes.
	bnWait(b, "topic peers", func() bool {
		for i := range n {
			if len(net.Nodes[i].PubSub().ListPeers(lmosproto.TopicAnnounce)) < 2 || len(raw[i].topic.ListPeers()) < 2 {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second)

	lmosArrivals := make(chan bnArrival, 4*n)
	rawArrivals := make(chan bnArrival, 4*n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i, nd := range net.Nodes {
		events, stop, err := nd.Directory().Subscribe("")
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		wg.Go(func() {
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						return
					}
					if ev.Type == directory.EventCreated {
						bnSend(ctx, lmosArrivals, bnArrival{i, ev.ThingID, time.Now()})
					}
				case <-ctx.Done():
					return
				}
			}
		})
	}
	for i, r := range raw {
		wg.Go(func() {
			for {
				m, err := r.sub.Next(ctx)
				if err != nil {
					return
				}
				bnSend(ctx, rawArrivals, bnArrival{i, string(m.GetData()[:16]), time.Now()})
			}
		})
	}

	// A warm-up publication (not measured) gives the size of a record.
	warm := testnet.UniqueID(b)
	start := time.Now()
	e, _, err := net.Nodes[0].Federation().Publish(ctx, testnet.TD(b, warm, "Bench 0", "bench-propagation"), nil)
	if err != nil {
		b.Fatal(err)
	}
	bnCollect(b, lmosArrivals, warm, n, start)
	recRaw, err := e.Raw()
	if err != nil {
		b.Fatal(err)
	}
	size := len(recRaw)
	time.Sleep(200 * time.Millisecond)

	// Each iteration: raw first, then lmosnode, each followed by the same
	// pause (in lmosnode's, the publication's DHT put and provides run).
	// The process's CPU time is split between the two windows, which last
	// about as long, so both carry the same idle background (heartbeats,
	// DHT refreshes) besides their own work.
	var lm, rw, pubTimes []time.Duration
	var lmCPU, rwCPU time.Duration
	i := 0
	for b.Loop() {
		pub := (i * 7) % n
		msg := make([]byte, size)
		_, _ = crand.Read(msg)
		cpu0 := bnCPU(b)
		start := time.Now()
		if err := raw[pub].topic.Publish(ctx, msg); err != nil {
			b.Fatal(err)
		}
		rw = append(rw, bnCollect(b, rawArrivals, string(msg[:16]), n, start))
		time.Sleep(bnPause)

		id := testnet.UniqueID(b)
		td := testnet.TD(b, id, "Bench "+strconv.Itoa(i), "bench-propagation")
		cpu1 := bnCPU(b)
		start = time.Now()
		if _, _, err := net.Nodes[pub].Federation().Publish(ctx, td, nil); err != nil {
			b.Fatal(err)
		}
		pubTimes = append(pubTimes, time.Since(start))
		lm = append(lm, bnCollect(b, lmosArrivals, id, n, start))
		time.Sleep(bnPause)
		cpu2 := bnCPU(b)
		rwCPU += cpu1 - cpu0
		lmCPU += cpu2 - cpu1
		i++
	}
	b.StopTimer()
	var lmConns, rawConns int
	for i := range n {
		lmConns += len(net.Nodes[i].Host().Network().Peers())
		rawConns += len(raw[i].h.Network().Peers())
	}
	b.Logf("Publish call p50 %.2f ms; process CPU per iteration: lmosnode window %.1f ms, raw window %.1f ms",
		bnPercentile(pubTimes, 50), float64(lmCPU)/float64(i)/1e6, float64(rwCPU)/float64(i)/1e6)
	b.ReportMetric(float64(lmCPU)/float64(i)/1e6, "lmos-cpu-ms/op")
	b.ReportMetric(float64(rwCPU)/float64(i)/1e6, "raw-cpu-ms/op")
	b.Logf("N=%d, %d samples, %d-byte records, %d links; mean peers per node: lmosnode %.1f, raw %.1f",
		n, len(lm), size, len(links), float64(lmConns)/float64(n), float64(rawConns)/float64(n))
	for _, p := range []struct {
		metric string
		pct    float64
		target string
	}{{"p50", 50, ""}, {"p99", 99, "≤ 1.5×"}} {
		l, r := bnPercentile(lm, p.pct), bnPercentile(rw, p.pct)
		b.ReportMetric(l, "lmos-"+p.metric+"-ms")
		b.ReportMetric(r, "raw-"+p.metric+"-ms")
		benchtab.Print(benchtab.Row{Row: "1", Case: fmt.Sprintf("propagation N=%d", n), Metric: p.metric, Unit: "ms",
			LMOS: l, Base: r, Baseline: "raw gossipsub", Target: p.target})
	}
}

func bnSend(ctx context.Context, ch chan<- bnArrival, a bnArrival) {
	select {
	case ch <- a:
	case <-ctx.Done():
	}
}

// BenchmarkColdDiscovery is row 2: on a network of 20 nodes (ring plus
// chords) where 5 publish a Thing with one capability, a fresh node with
// gossip and sync off finds the capability (FindCapability: DHT provider
// lookup, then the verified TDs from every provider) against a fresh raw
// kad-dht host (same protocol, /lmos) finding the capability's providers
// (FindProvidersAsync, until all 5 are found). Both are DHT clients that
// join through the same node; each iteration takes one sample of each,
// with a fresh node and host.
func BenchmarkColdDiscovery(b *testing.B) {
	const n, publishers = 20, 5
	net := testnet.New(b, n, testnet.Options{})
	bnTopology(net)
	capability := "bench-cold-" + testnet.UniqueID(b)[len("urn:lmos:test:"):]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pubs []peer.ID
	for k := range publishers {
		nd := net.Nodes[2+k*n/publishers]
		pubs = append(pubs, nd.PeerID())
		if _, _, err := nd.Federation().Publish(ctx, testnet.TD(b, testnet.UniqueID(b), "Cold "+strconv.Itoa(k), capability), nil); err != nil {
			b.Fatal(err)
		}
	}
	key := lmosdht.CapabilityCID(capability)
	// The publications are in the DHT once a raw lookup finds them all.
	probe := bnNewRawHost(b, bnRawOpts{mode: kaddht.ModeClient})
	bnConnect(b, probe.h, net.Nodes[0].Host())
	bnWait(b, "providers in the DHT", func() bool {
		found, _ := bnFindProviders(ctx, probe, key, publishers)
		return found >= 0
	})
	probe.close()

	var lm, rw, rwEnd []time.Duration
	incomplete, rawIncomplete, i := 0, 0, 0
	for b.Loop() {
		entry := net.Nodes[(i*3)%n]
		lmos := func() {
			cold := bnColdNode(b)
			bnConnect(b, cold.Host(), entry.Host())
			bnWait(b, "cold node's routing table", func() bool { return cold.DHT().RoutingTable().Size() > 0 })
			start := time.Now()
			found, err := cold.Federation().FindCapability(ctx, capability)
			d := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if len(found) < publishers {
				incomplete++
			}
			for _, e := range found {
				if !slices.Contains(pubs, e.Publisher) {
					b.Fatalf("found a Thing of %s, not a publisher", e.Publisher)
				}
			}
			lm = append(lm, d)
			if err := cold.Close(); err != nil {
				b.Fatal(err)
			}
		}
		rawLookup := func() {
			r := bnNewRawHost(b, bnRawOpts{mode: kaddht.ModeClient})
			bnConnect(b, r.h, entry.Host())
			bnWait(b, "raw host's routing table", func() bool { return r.dht.RoutingTable().Size() > 0 })
			d, end := bnFindProviders(ctx, r, key, publishers)
			if d < 0 {
				rawIncomplete++
				d = bnDeadline
			}
			rw = append(rw, d)
			rwEnd = append(rwEnd, end)
			r.close()
		}
		if i%2 == 0 {
			lmos()
			rawLookup()
		} else {
			rawLookup()
			lmos()
		}
		i++
	}
	b.StopTimer()
	b.Logf("%d nodes, %d providers, %d samples, %d incomplete lookups (raw: %d)", n, publishers, len(lm), incomplete, rawIncomplete)
	benchtab.Print(benchtab.Row{Row: "2", Case: fmt.Sprintf("raw lookup until it ends (%d providers asked)", federation.MaxProviders), Metric: "p50", Unit: "ms",
		LMOS: bnPercentile(lm, 50), Base: bnPercentile(rwEnd, 50), Baseline: "raw kad-dht, whole lookup"})
	for _, p := range []struct {
		metric string
		pct    float64
		target string
	}{{"p50", 50, "≤ 3×"}, {"p99", 99, ""}} {
		l, r := bnPercentile(lm, p.pct), bnPercentile(rw, p.pct)
		b.ReportMetric(l, "lmos-"+p.metric+"-ms")
		b.ReportMetric(r, "raw-"+p.metric+"-ms")
		benchtab.Print(benchtab.Row{Row: "2", Case: fmt.Sprintf("cold discovery, %d of %d nodes provide", publishers, n), Metric: p.metric, Unit: "ms",
			LMOS: l, Base: r, Baseline: "raw kad-dht FindProviders", Target: p.target})
	}
}

// bnFindProviders returns how long r's DHT took to find want providers of
// key (-1 if its lookup ended with fewer), and how long the lookup ran
// until it ended, asking for federation.MaxProviders as FindCapability
// does.
func bnFindProviders(ctx context.Context, r *bnRawHost, key cid.Cid, want int) (found, ended time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, bnDeadline)
	defer cancel()
	start := time.Now()
	found = -1
	seen := make(map[peer.ID]bool)
	for ai := range r.dht.FindProvidersAsync(ctx, key, federation.MaxProviders) {
		seen[ai.ID] = true
		if len(seen) == want {
			found = time.Since(start)
		}
	}
	return found, time.Since(start)
}

// bnColdNode starts a node that learns nothing by itself: gossip and sync
// on connect off, a DHT client (so that the network's routing tables do
// not fill with the benchmark's short-lived nodes). The caller closes it.
func bnColdNode(b *testing.B) *node.Node {
	b.Helper()
	cfg := testnet.Config(b)
	cfg.Gossip, cfg.SyncOnConnect = false, false
	cfg.DHTMode = config.DHTModeClient
	nd, err := node.New(cfg, node.WithLogger(testnet.Logger(b)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bnDeadline)
	defer cancel()
	if err := nd.Start(ctx); err != nil {
		b.Fatal(errors.Join(err, nd.Close()))
	}
	return nd
}

// bnCostEnv names the environment variable that makes
// TestBNNodeCostChild measure one network: "lmos:N" or "raw:N".
const bnCostEnv = "LMOS_BENCH_NODECOST"

// bnCostPrefix starts the line on which the child reports its figures.
const bnCostPrefix = "BNCOST "

type bnCost struct {
	RSSMB      float64 `json:"rssMB"`
	HeapMB     float64 `json:"heapMB"`
	Goroutines int     `json:"goroutines"`
}

// BenchmarkNodeCost is row 6: the resident memory and goroutines of one
// idle node, and the resident memory of 25, 50 and 100 nodes in one
// process (linked as a ring plus chords), against as many raw libp2p hosts
// each with kad-dht and gossipsub (joined to one topic), linked the same
// way. Every figure comes from a fresh process (this test binary running
// TestBNNodeCostChild), measured after the network idled 2 s and a
// runtime.GC().
func BenchmarkNodeCost(b *testing.B) {
	for _, n := range []int{1, 25, 50, 100} {
		name := fmt.Sprintf("nodes=%d", n)
		if n == 1 {
			name = "idle"
		}
		b.Run(name, func(b *testing.B) {
			var lm, rw bnCost
			for b.Loop() {
				lm = bnMeasureCost(b, "lmos", n)
				rw = bnMeasureCost(b, "raw", n)
			}
			b.ReportMetric(lm.RSSMB, "lmos-RSS-MB")
			b.ReportMetric(rw.RSSMB, "raw-RSS-MB")
			b.Logf("lmosnode %+v; raw %+v", lm, rw)
			if n == 1 {
				benchtab.Print(benchtab.Row{Row: "6", Case: "one node, idle", Metric: "RSS", Unit: "MB",
					LMOS: lm.RSSMB, Base: rw.RSSMB, Baseline: "libp2p+kad-dht+gossipsub", Target: "≤ 60 MB"})
				benchtab.Print(benchtab.Row{Row: "6", Case: "one node, idle", Metric: "goroutines",
					LMOS: float64(lm.Goroutines), Base: float64(rw.Goroutines), Baseline: "libp2p+kad-dht+gossipsub"})
				return
			}
			benchtab.Print(benchtab.Row{Row: "6", Case: fmt.Sprintf("%d nodes in one process", n), Metric: "RSS", Unit: "MB",
				LMOS: lm.RSSMB, Base: rw.RSSMB, Baseline: "libp2p+kad-dht+gossipsub", Target: "≤ 1.5×"})
		})
	}
}

// bnMeasureCost runs TestBNNodeCostChild in a fresh process for n nodes
// of kind ("lmos" or "raw") and returns its figures.
func bnMeasureCost(b *testing.B, kind string, n int) bnCost {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBNNodeCostChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", bnCostEnv, kind, n))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s:%d: %v\n%s", kind, n, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), bnCostPrefix); ok {
			var c bnCost
			if err := json.Unmarshal([]byte(rest), &c); err != nil {
				b.Fatal(err)
			}
			return c
		}
	}
	b.Fatalf("%s:%d: no %q line in\n%s", kind, n, bnCostPrefix, out)
	return bnCost{}
}

// TestBNNodeCostChild is BenchmarkNodeCost's measuring process; it skips
// unless bnCostEnv is set.
func TestBNNodeCostChild(t *testing.T) {
	spec := os.Getenv(bnCostEnv)
	if spec == "" {
		t.Skip(bnCostEnv + " not set: run by BenchmarkNodeCost")
	}
	kind, count, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want lmos:N or raw:N", bnCostEnv, spec)
	}
	switch kind {
	case "lmos":
		net := testnet.New(t, n, testnet.Options{})
		bnTopology(net)
	case "raw":
		bnRawNet(t, n, true)
	default:
		t.Fatalf("%s=%q: want lmos:N or raw:N", bnCostEnv, spec)
	}
	time.Sleep(2 * time.Second)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c := bnCost{RSSMB: bnRSS(t), HeapMB: float64(ms.HeapInuse) / (1 << 20), Goroutines: runtime.NumGoroutine()}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", bnCostPrefix, out)
}

// bnCPU returns the CPU time (user and system) this process used so far.
func bnCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bnRSS returns this process's resident set size in MiB (VmRSS).
func bnRSS(tb testing.TB) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}
