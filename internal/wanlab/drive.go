package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/internal/wandelay"
)

// driver runs the rows from the router namespace, through the peers'
// control servers (not delayed: the router's own traffic is not
// forwarded).
type driver struct {
	n       int
	cold    int // the cold-discovery namespace's index
	client  *http.Client
	nodeIDs []string // by index - 1
	delay   wandelay.Config
	// alive are the indexes of the nodes still running (the scale lab
	// kills some); loaded is how many Things each has published in the
	// scale lab; suffix ends the name of every case measured.
	alive  []int
	loaded int
	suffix string
	// dirNodes are the directory nodes (1..dirNodes) among the others,
	// whose role is others ("light" or "auto").
	dirNodes int
	others   string

	// lmosOn and rawOn say what this run measures: both, side by side,
	// unless the raw hosts are measured apart (the scale lab: a hundred
	// nodes and a hundred raw hosts at once overload two cores). Then a
	// run of the nodes alone records their samples in apart, and a later
	// run of the raw hosts alone, on the same namespaces and links,
	// measures the baseline and prints the rows.
	lmosOn, rawOn bool
	apart         *apartResults
	measured      int // measurements taken so far (index into apart.Measures)
}

// apartResults is what the nodes' run of a lab with the raw hosts apart
// hands the raw hosts' run: the size of a record, and the lmosnode
// samples of each measurement of rows 1 and 2, in the order taken.
type apartResults struct {
	Size     int       `json:"size"`
	Measures []measure `json:"measures"`
}

// measure is one measurement's lmosnode samples (ms) and, for row 2, how
// many of its lookups found every one of its providers.
type measure struct {
	Row       string    `json:"row"`
	LM        []float64 `json:"lm"`
	Complete  int       `json:"complete"`
	Providers int       `json:"providers"`
}

// next returns the lmosnode samples of the next measurement of row: lm
// when the nodes are measured here (recorded, if the raw hosts are
// measured apart), else those the nodes' run recorded.
func (d *driver) next(row string, m measure) (measure, error) {
	m.Row = row
	if d.lmosOn {
		if d.apart != nil {
			d.apart.Measures = append(d.apart.Measures, m)
		}
		return m, nil
	}
	i := d.measured
	d.measured++
	if i >= len(d.apart.Measures) || d.apart.Measures[i].Row != row {
		return measure{}, fmt.Errorf("row %s: the nodes' run recorded no such measurement (#%d of %d)", row, i+1, len(d.apart.Measures))
	}
	return d.apart.Measures[i], nil
}

func runDrive(args []string) error {
	fs := flag.NewFlagSet("drive", flag.ContinueOnError)
	n := fs.Int("n", 30, "namespaces with a node and a raw host (1..n); n+1 is the cold one")
	samples := fs.Int("samples", 20, "row 1: publications of each kind")
	coldSamples := fs.Int("cold-samples", 10, "row 2: cold lookups of each kind")
	pairs := fs.Int("pairs", 6, "row 3: consumer → owner pairs")
	calls := fs.Int("calls", 30, "row 3: calls of each kind per pair")
	providers := fs.Int("providers", 5, "row 2: nodes that provide the capability")
	ready := fs.Duration("ready", 3*time.Minute, "how long the nodes and peers may take to come up, and the topic meshes to form once linked")
	var dirNodes int
	scaled := fs.Bool("scale", false, "the scale lab: load the federation in two stages, then rows 1 and 2, kill a share, rows 1 and 2 again")
	sc := scaleConfig{}
	fs.IntVar(&sc.things, "things", 1000, "scale: Things each node publishes in the end")
	fs.IntVar(&sc.growth, "growth", 10, "scale: how many times more Things the second stage holds than the first")
	fs.IntVar(&sc.caps, "caps", 100, "scale: capabilities the Things spread over")
	transportFlag(fs)
	fs.Float64Var(&sc.kill, "kill", 0.1, "scale: share of the nodes killed at once (0: none)")
	fs.DurationVar(&sc.window, "window", 30*time.Second, "scale: the idle window after each stage")
	fs.DurationVar(&sc.settle, "settle", 20*time.Minute, "scale: how long the directories may take to settle after a stage")
	fs.IntVar(&dirNodes, "directory-nodes", 0, "scale: nodes 1..this are directory nodes and the others light ones (reported apart); 0: all alike")
	others := fs.String("others", "light", "scale: the role of the nodes after the directory nodes, as the report names them")
	phase := fs.String("phase", "both", "both: nodes and raw hosts side by side; nodes: the nodes alone, their samples written to -results; raw: the raw hosts alone (started here), after a nodes run, the rows printed with its samples")
	results := fs.String("results", "", "-phase nodes or raw: the file the nodes' samples go to and come from")
	d := wandelay.DefaultConfig()
	fs.DurationVar(&d.RTTMin, "rtt-min", d.RTTMin, "the lab's smallest RTT (for the report)")
	fs.DurationVar(&d.RTTMax, "rtt-max", d.RTTMax, "the lab's largest RTT (for the report)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dr := &driver{n: *n, cold: *n + 1, client: &http.Client{Timeout: 3 * time.Minute}, delay: d, dirNodes: dirNodes, others: *others}
	for k := 1; k <= *n; k++ {
		dr.alive = append(dr.alive, k)
	}
	switch *phase {
	case "both":
		dr.lmosOn, dr.rawOn = true, true
	case "nodes":
		dr.lmosOn, dr.apart = true, &apartResults{}
		defer func() {
			if err := writeResults(*results, dr.apart); err != nil {
				fmt.Fprintln(os.Stderr, "wanlab:", err)
			}
		}()
	case "raw":
		dr.rawOn = true
		var err error
		if dr.apart, err = readResults(*results); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-phase %q: want both, nodes or raw", *phase)
	}
	if *phase != "both" && (*results == "" || !*scaled) {
		return errors.New("-phase nodes and raw are the scale lab's (-scale), with -results")
	}
	ctx := context.Background()
	type step struct {
		name string
		fn   func() error
	}
	steps := []step{
		{"ready", func() error { return dr.waitReady(ctx, *ready) }},
		{"links", func() error { return dr.link(ctx, *ready) }},
		{"row 1", func() error { return dr.propagation(ctx, *samples) }},
		{"row 3", func() error { return dr.calls(ctx, *pairs, *calls) }},
		{"row 2", func() error { return dr.coldDiscovery(ctx, *providers, *coldSamples) }},
	}
	if *scaled {
		sc.samples, sc.cold = *samples, *coldSamples
		steps = append(steps[:2], step{"scale", func() error { return dr.scale(ctx, sc) }})
	}
	for _, s := range steps {
		t0 := time.Now()
		fmt.Printf("\n== %s\n", s.name)
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("%s done in %.1fs\n", s.name, time.Since(t0).Seconds())
	}
	return nil
}

// ctl calls peer k's control server and decodes its JSON answer into out.
func (d *driver) ctl(ctx context.Context, k int, method, path string, q url.Values, out any) error {
	u := fmt.Sprintf("http://%s:%d%s?%s", ipOf(k), ctlPort, path, q.Encode())
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	if err := doJSON(d.client, req, out); err != nil {
		return fmt.Errorf("peer %d: %w", k, err)
	}
	return nil
}

type status struct {
	Raw        bool   `json:"raw"`
	RawPeers   int    `json:"rawPeers"`
	TopicPeers int    `json:"topicPeers"`
	NodeID     string `json:"nodeID"`
	NodePeers  int    `json:"nodePeers"`
	SSE        bool   `json:"sse"`
}

func (d *driver) status(ctx context.Context) ([]status, error) {
	st := make([]status, d.n)
	err := d.each(func(k int) error { return d.ctl(ctx, k, http.MethodGet, "/status", nil, &st[k-1]) })
	return st, err
}

// each runs fn(k) for every node k alive at once and returns the errors.
func (d *driver) each(fn func(k int) error) error {
	errs := make([]error, len(d.alive))
	var wg sync.WaitGroup
	for i, k := range d.alive {
		wg.Go(func() { errs[i] = fn(k) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// poll runs cond every 200 ms until it holds, for at most limit.
func poll(limit time.Duration, what string, cond func() (bool, string)) error {
	return pollEvery(200*time.Millisecond, limit, what, cond)
}

func (d *driver) waitReady(ctx context.Context, limit time.Duration) error {
	if !d.lmosOn {
		if err := d.each(func(k int) error { return d.ctl(ctx, k, http.MethodPost, "/raw/start", nil, nil) }); err != nil {
			return err
		}
	}
	err := poll(limit, "every node's API and event stream, every raw host, every peer's control server", func() (bool, string) {
		st, err := d.status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for k, s := range st {
			if d.lmosOn && (s.NodeID == "" || !s.SSE) || d.rawOn && !s.Raw {
				return false, fmt.Sprintf("namespace %d: %+v", k+1, s)
			}
		}
		d.nodeIDs = make([]string, d.n)
		for k, s := range st {
			d.nodeIDs[k] = s.NodeID
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	fmt.Printf("%d namespaces' %s up\n", d.n, d.kinds())
	return poll(limit, "the cold namespace's control server", func() (bool, string) {
		err := d.ctl(ctx, d.cold, http.MethodGet, "/status", nil, nil)
		return err == nil, fmt.Sprint(err)
	})
}

// kinds names what this run measures: "nodes", "raw hosts" or both.
func (d *driver) kinds() string {
	switch {
	case !d.rawOn:
		return "nodes"
	case !d.lmosOn:
		return "raw hosts"
	}
	return "nodes and raw hosts"
}

func (d *driver) nodeAddr(k int) string {
	return hostAddr(ipOf(k), nodePort) + "/p2p/" + d.nodeIDs[k-1]
}

// maxLinking bounds the links made at once: a hundred handshakes at once
// starve two cores.
const maxLinking = 16

// link connects every node and every raw host to its link peers, and
// waits until each has two topic peers (its ring neighbours at least) and
// the meshes had three heartbeats to graft, as the loopback benchmark.
func (d *driver) link(ctx context.Context, meshes time.Duration) error {
	l := links(d.n)
	errs := make([]error, len(l))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxLinking)
	for i, e := range l {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if d.lmosOn {
				errs[i] = retry(func() error {
					return d.ctl(ctx, e[0], http.MethodPost, "/lmos/connect", url.Values{"addr": {d.nodeAddr(e[1])}}, nil)
				})
			}
			if d.rawOn {
				errs[i] = errors.Join(errs[i], retry(func() error {
					return d.ctl(ctx, e[0], http.MethodPost, "/raw/connect", url.Values{"to": {strconv.Itoa(e[1])}}, nil)
				}))
			}
		})
	}
	wg.Wait()
	// A chord that did not link is reported, not fatal: the ring keeps
	// every node and raw host connected (the wait below checks), and
	// the DHT and gossipsub find other peers. (In the 100-node runs a
	// few raw hosts' chords timed out at TCP, every retry, while the
	// nodes in the same namespaces linked.)
	var missing []string
	for i, e := range l {
		if errs[i] == nil {
			continue
		}
		if e[1] != e[0]%d.n+1 {
			missing = append(missing, fmt.Sprintf("%d-%d", e[0], e[1]))
			errs[i] = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(missing) > 0 {
		fmt.Printf("chords not linked (a node's, a raw host's or both): %s\n", strings.Join(missing, " "))
	}
	// Linked when every raw host has two topic peers (its ring
	// neighbours at least), or, without raw hosts, every node two peers.
	err := poll(meshes, "two topic peers on every raw host, or two peers on every node", func() (bool, string) {
		st, err := d.status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for k, s := range st {
			if d.rawOn && s.TopicPeers < 2 {
				return false, fmt.Sprintf("raw host %d: %d topic peers", k+1, s.TopicPeers)
			}
			if !d.rawOn && s.NodePeers < 2 {
				return false, fmt.Sprintf("node %d: %d peers", k+1, s.NodePeers)
			}
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	st, err := d.status(ctx)
	if err != nil {
		return err
	}
	var np, rp int
	for _, s := range st {
		np += s.NodePeers
		rp += s.RawPeers
	}
	fmt.Printf("%d links; mean peers per node: lmosnode %.1f, raw %.1f\n", len(l), float64(np)/float64(d.n), float64(rp)/float64(d.n))
	return nil
}

// retry runs fn up to eight times, three seconds apart, until it
// succeeds: a dial can lose to one the other side (or its DHT) started at
// the same moment, and on a loaded machine a failed dial leaves libp2p's
// dial backoff (5 s at first) to wait out.
func retry(fn func() error) error {
	var err error
	for range 8 {
		if err = fn(); err == nil {
			return nil
		}
		time.Sleep(3 * time.Second)
	}
	return err
}

// arrivals waits until key arrived at every peer and returns the latest
// arrival (unix ns).
func (d *driver) arrivals(ctx context.Context, key string) (int64, error) {
	var mu sync.Mutex
	var at []int64
	err := d.each(func(k int) error {
		var r struct {
			At int64 `json:"at"`
		}
		err := d.ctl(ctx, k, http.MethodGet, "/wait", url.Values{"key": {key}, "timeout": {"60s"}}, &r)
		mu.Lock()
		at = append(at, r.At)
		mu.Unlock()
		return err
	})
	return slices.Max(at), err
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return "urn:uuid:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

type started struct {
	Key   string `json:"key"`
	Start int64  `json:"start"`
	Size  int    `json:"size"`
}

// publishLMOS publishes a Thing on node k and returns when its peer
// stamped the start.
func (d *driver) publishLMOS(ctx context.Context, k int, id, capability string, echo, size bool) (started, error) {
	q := url.Values{"id": {id}, "capability": {capability}}
	if echo {
		q.Set("echo", "1")
	}
	if size {
		q.Set("size", "1")
	}
	var s started
	err := d.ctl(ctx, k, http.MethodPost, "/lmos/publish", q, &s)
	s.Key = "lmos:" + id
	return s, err
}

// pause follows each propagation sample, so that the next starts on a
// quiet network (longer than the loopback benchmark's 150 ms: a round
// trip here is up to 120 ms).
const pause = 500 * time.Millisecond

// propagation is row 1: a Thing published on one node until it is in all
// N directories (each node's thing_created event), against raw gossipsub
// delivering a message of the record's size to all N raw hosts.
func (d *driver) propagation(ctx context.Context, samples int) error {
	size := 0
	if d.lmosOn {
		// The nodes that need the records: a light node holds the Things of
		// the capabilities it looks up (a no-op for the others).
		if err := d.each(func(k int) error {
			return d.ctl(ctx, k, http.MethodPost, "/lmos/use", url.Values{"capability": {"wan-propagation"}}, nil)
		}); err != nil {
			return err
		}
		warm, err := d.publishLMOS(ctx, d.alive[0], uuid(), "wan-propagation", false, true)
		if err != nil {
			return err
		}
		if _, err := d.arrivals(ctx, warm.Key); err != nil {
			return fmt.Errorf("warm-up publication: %w", err)
		}
		size = warm.Size
		if d.apart != nil {
			d.apart.Size = size
		}
	} else {
		size = d.apart.Size
	}
	fmt.Printf("records of about %d bytes\n", size)
	var lm, rw []float64
	for i := range samples {
		pub := d.alive[(i*7)%len(d.alive)]
		// take times one publication until it arrived at every peer.
		take := func(what string, publish func() (started, error)) (float64, error) {
			s, err := publish()
			if err != nil {
				return 0, err
			}
			last, err := d.arrivals(ctx, s.Key)
			if err != nil {
				return 0, fmt.Errorf("%s sample %d: %w", what, i, err)
			}
			time.Sleep(pause)
			return ms(time.Duration(last - s.Start)), nil
		}
		line := fmt.Sprintf("  sample %2d from node %2d:", i, pub)
		if d.rawOn {
			v, err := take("raw", func() (s started, err error) {
				err = d.ctl(ctx, pub, http.MethodPost, "/raw/publish", url.Values{"size": {strconv.Itoa(size)}}, &s)
				return s, err
			})
			if err != nil {
				return err
			}
			rw = append(rw, v)
			line += fmt.Sprintf(" raw %6.1f ms", v)
		}
		if d.lmosOn {
			v, err := take("lmosnode", func() (started, error) {
				return d.publishLMOS(ctx, pub, uuid(), "wan-propagation", false, false)
			})
			if err != nil {
				return err
			}
			lm = append(lm, v)
			line += fmt.Sprintf(" lmosnode %6.1f ms", v)
		}
		fmt.Println(line)
	}
	m, err := d.next("1", measure{LM: lm})
	if err != nil || !d.rawOn {
		return err
	}
	for _, p := range percentiles {
		benchtab.Print(benchtab.Row{Row: "1", Case: fmt.Sprintf("WAN propagation N=%d%s", len(d.alive), d.suffix), Metric: p.metric, Unit: "ms",
			LMOS: pct(m.LM, p.pct), Base: pct(rw, p.pct), Baseline: "raw gossipsub" + d.apartNote(), Target: p.target("p99", "≤ 1.5×")})
	}
	return nil
}

// apartNote ends the name of a baseline measured apart from the nodes.
func (d *driver) apartNote() string {
	if d.lmosOn {
		return ""
	}
	return ", measured apart"
}

// calls is row 3: pairs of consumer and owner across the lab, each
// consumer calling the owner's echo Thing through its own HTTP binding
// (over libp2p to the owner, which calls its backend), against a direct
// HTTP call to the owner's backend and a raw libp2p stream round trip.
func (d *driver) calls(ctx context.Context, pairs, n int) error {
	var lm, direct, raw []float64
	for p := range pairs {
		c := (p*5)%d.n + 1
		o := (p*5+d.n/2+p)%d.n + 1
		if o == c {
			o = c%d.n + 1
		}
		id := uuid()
		s, err := d.publishLMOS(ctx, o, id, "wan-echo", true, false)
		if err != nil {
			return err
		}
		if err := d.ctl(ctx, c, http.MethodGet, "/wait", url.Values{"key": {s.Key}, "timeout": {"60s"}}, nil); err != nil {
			return fmt.Errorf("consumer %d learning owner %d's Thing: %w", c, o, err)
		}
		var r map[string][]float64
		if err := d.ctl(ctx, c, http.MethodPost, "/rtt", url.Values{"to": {strconv.Itoa(o)}, "n": {strconv.Itoa(n)}, "thing": {id}}, &r); err != nil {
			return err
		}
		rtt := d.delay.PairRTT(netip.MustParseAddr(ipOf(c)), netip.MustParseAddr(ipOf(o)))
		fmt.Printf("  node %2d → node %2d (link RTT %5.1f ms): p50 HTTP binding %6.1f ms, direct HTTP %6.1f ms, raw libp2p stream %6.1f ms\n",
			c, o, ms(rtt), pct(r["lmos"], 50), pct(r["http"], 50), pct(r["raw"], 50))
		lm, direct, raw = append(lm, r["lmos"]...), append(direct, r["http"]...), append(raw, r["raw"]...)
	}
	for _, p := range percentiles {
		benchtab.Print(benchtab.Row{Row: "3", Case: "WAN call: HTTP binding via B → A → backend, c=1", Metric: p.metric, Unit: "ms",
			LMOS: pct(lm, p.pct), Base: pct(direct, p.pct), Baseline: "direct HTTP B → A's backend, kept-alive", Target: p.target("p50", "≤ 2.5×")})
		benchtab.Print(benchtab.Row{Row: "3", Case: "WAN floor: raw libp2p echo, new stream per call", Metric: p.metric, Unit: "ms",
			LMOS: pct(raw, p.pct), Base: pct(direct, p.pct), Baseline: "direct HTTP B → A's backend, kept-alive"})
	}
	return nil
}

// coldDiscovery is row 2: several nodes publish a Thing with one
// capability and their raw hosts provide the capability's key; a fresh
// node in the cold namespace, joining through one node, finds the
// capability (GET /things?capability=: the DHT lookup, then the providers'
// TDs), against a fresh raw kad-dht client joining through the raw host of
// the same namespace and finding the providers.
func (d *driver) coldDiscovery(ctx context.Context, providers, samples int) error {
	capability := "wan-cold-" + uuid()[len("urn:uuid:"):][:8]
	provs, err := d.provideCapability(ctx, capability, providers)
	if err != nil {
		return err
	}
	providers = len(provs) // fewer when n is small
	cs := coldSamples{d: d, capability: capability, providers: providers}
	for i := range samples {
		entry := d.alive[(i*3)%len(d.alive)]
		var kinds []func(context.Context, int, int) error
		if d.lmosOn {
			kinds = append(kinds, cs.lmos)
		}
		if d.rawOn {
			kinds = append(kinds, cs.raw)
		}
		if i%2 == 1 {
			slices.Reverse(kinds)
		}
		for _, take := range kinds {
			if err := take(ctx, i, entry); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%d samples, %d incomplete lookups\n", samples, cs.incomplete)
	m, err := d.next("2", measure{LM: cs.lm, Complete: cs.completeLM, Providers: providers})
	if err != nil || !d.rawOn {
		return err
	}
	note := d.apartNote()
	for _, p := range percentiles {
		benchtab.Print(benchtab.Row{Row: "2", Case: fmt.Sprintf("WAN cold discovery, %d of %d nodes provide%s", providers, len(d.alive), d.suffix), Metric: p.metric, Unit: "ms",
			LMOS: pct(m.LM, p.pct), Base: pct(cs.rw, p.pct), Baseline: "raw kad-dht FindProviders" + note, Target: p.target("p50", "≤ 3×")})
	}
	benchtab.Print(benchtab.Row{Row: "2", Case: "WAN raw lookup until it ends" + d.suffix, Metric: "p50", Unit: "ms",
		LMOS: pct(m.LM, 50), Base: pct(cs.rwEnd, 50), Baseline: "raw kad-dht, whole lookup" + note})
	benchtab.Print(benchtab.Row{Row: "2", Case: "WAN cold discovery completeness" + d.suffix, Metric: "all providers found", Unit: "%",
		LMOS: 100 * float64(m.Complete) / float64(max(len(m.LM), 1)), Base: 100 * float64(cs.completeRaw) / float64(max(len(cs.rw), 1)),
		Baseline: "raw kad-dht FindProviders" + note, Target: "≥ 99 %"})
	return nil
}

// provideCapability has up to providers nodes, spread over the lab,
// publish a Thing with capability and their raw hosts provide its key,
// and waits until a raw lookup finds them all. It returns the nodes.
func (d *driver) provideCapability(ctx context.Context, capability string, providers int) ([]int, error) {
	var provs []int
	for j := range providers {
		if k := d.alive[(1+j*len(d.alive)/providers)%len(d.alive)]; !slices.Contains(provs, k) {
			provs = append(provs, k)
		}
	}
	for _, k := range provs {
		if d.lmosOn {
			if _, err := d.publishLMOS(ctx, k, uuid(), capability, false, false); err != nil {
				return nil, err
			}
		}
		if d.rawOn {
			if err := d.ctl(ctx, k, http.MethodPost, "/raw/provide", url.Values{"capability": {capability}}, nil); err != nil {
				return nil, err
			}
		}
	}
	fmt.Printf("capability %s provided by the %s of namespaces %v\n", capability, d.kinds(), provs)
	if !d.rawOn {
		// Without raw hosts, wait for a fresh node to find them all.
		err := poll(time.Minute, "all providers found by a fresh node", func() (bool, string) {
			cs := coldSamples{d: d, capability: capability, providers: len(provs)}
			err := cs.lmos(ctx, -1, d.alive[0])
			return err == nil && cs.completeLM == 1, fmt.Sprint(err)
		})
		return provs, err
	}
	want := strconv.Itoa(len(provs))
	err := poll(time.Minute, "all raw providers in the DHT", func() (bool, string) {
		var r struct {
			Found float64 `json:"found"`
		}
		err := d.ctl(ctx, d.cold, http.MethodPost, "/raw/coldfind", url.Values{"capability": {capability}, "want": {want}, "entry": {strconv.Itoa(d.alive[0])}}, &r)
		return err == nil && r.Found >= 0, fmt.Sprint(err, r)
	})
	return provs, err
}

// coldSamples are the samples of row 2: the lookup times of a fresh node
// (lm) and of a fresh raw kad-dht client (rw: until it found every
// provider; rwEnd: until its lookup ended), in ms.
type coldSamples struct {
	d          *driver
	capability string
	providers  int
	lm, rw     []float64
	rwEnd      []float64
	// incomplete counts the lookups that did not find every provider;
	// completeLM and completeRaw the lookups of each kind that did.
	incomplete              int
	completeLM, completeRaw int
}

// lmos takes sample i of a fresh node joining through node entry.
func (cs *coldSamples) lmos(ctx context.Context, i, entry int) error {
	d := cs.d
	if err := d.ctl(ctx, d.cold, http.MethodPost, "/cold/start", url.Values{"bootstrap": {d.nodeAddr(entry)}}, nil); err != nil {
		return err
	}
	defer func() { _ = d.ctl(ctx, d.cold, http.MethodPost, "/cold/stop", nil, nil) }()
	var r struct {
		MS     float64 `json:"ms"`
		Count  int     `json:"count"`
		Lookup string  `json:"lookup"`
	}
	if err := d.ctl(ctx, d.cold, http.MethodPost, "/cold/find", url.Values{"capability": {cs.capability}}, &r); err != nil {
		return err
	}
	if r.Count < cs.providers {
		cs.incomplete++
	} else {
		cs.completeLM++
	}
	cs.lm = append(cs.lm, r.MS)
	fmt.Printf("  sample %2d via node %2d: lmosnode %6.1f ms (%d Things)\n", i, entry, r.MS, r.Count)
	if r.Lookup != "" {
		fmt.Printf("    %s\n", r.Lookup)
	}
	return nil
}

// raw takes sample i of a fresh raw kad-dht client joining through the raw
// host of namespace entry.
func (cs *coldSamples) raw(ctx context.Context, i, entry int) error {
	d := cs.d
	var r struct {
		Found, Ended float64
		Providers    int
	}
	q := url.Values{"capability": {cs.capability}, "want": {strconv.Itoa(cs.providers)}, "entry": {strconv.Itoa(entry)}}
	if err := d.ctl(ctx, d.cold, http.MethodPost, "/raw/coldfind", q, &r); err != nil {
		return err
	}
	if r.Found < 0 {
		cs.incomplete++
		r.Found = 60_000
	} else {
		cs.completeRaw++
	}
	cs.rw, cs.rwEnd = append(cs.rw, r.Found), append(cs.rwEnd, r.Ended)
	fmt.Printf("  sample %2d via node %2d: raw      %6.1f ms (lookup ended %6.1f ms, %d providers)\n", i, entry, r.Found, r.Ended, r.Providers)
	return nil
}

// percentiles are the figures each row reports.
var percentiles = []quantile{{"p50", 50}, {"p99", 99}}

type quantile struct {
	metric string
	pct    float64
}

// target is t on the row of metric at (the issue sets one figure's
// target per row), empty on the others.
func (q quantile) target(at, t string) string {
	if q.metric != at {
		return ""
	}
	return t
}

// pct is the p-th percentile (nearest rank) of v.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
