package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/lmosnode/lmosnode/internal/benchtab"
)

// The scale lab (scripts/lab.sh scale) is the WAN lab with the federation
// loaded: every node publishes Things in two stages, the second growth
// times the first, and the lab measures what each node holds and hears at
// each stage, then rows 1 and 2, then kills a share of the nodes at once
// and measures rows 1 and 2 again among the survivors.

// scaleID and scaleCapability name Thing i of node k and its capability:
// a node's Things offer nodeCapabilities of the caps capabilities (an
// organisation's node hosts agents of a few kinds), the nodes' sets spread
// over all of them.
func scaleID(k, i int) string { return fmt.Sprintf("urn:lmos:scale:%d:%d", k, i) }

func scaleCapability(k, i, caps int) string {
	return "scale-" + strconv.Itoa((k*nodeCapabilities+i%nodeCapabilities)%caps)
}

// nodeCapabilities is how many capabilities one node's Things offer.
const nodeCapabilities = 2

const scalePrefix = "urn:lmos:scale:"

// bulk serves POST /lmos/bulk?from=F&to=T&caps=C: the node publishes its
// Things F..T-1, four API requests at a time; the answer has how many
// and how long it took.
func (p *wanPeer) bulk(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, _ := strconv.Atoi(q.Get("from"))
	to, _ := strconv.Atoi(q.Get("to"))
	caps, _ := strconv.Atoi(q.Get("caps"))
	if from < 0 || to < from || caps < 1 {
		http.Error(w, "want 0 ≤ from ≤ to and caps ≥ 1", http.StatusBadRequest)
		return
	}
	start := time.Now()
	var next atomic.Int64
	next.Store(int64(from))
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for g := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
				td := thingTD(scaleID(p.k, i), fmt.Sprintf("Scale lab %d/%d", p.k, i), scaleCapability(p.k, i, caps), false)
				if err := p.callNode(r.Context(), p.home, http.MethodPost, "/api/v1/things", map[string]any{"td": td}, nil); err != nil {
					errs[g] = fmt.Errorf("thing %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"published": to - from, "ms": ms(time.Since(start))})
}

// use serves POST /lmos/use?capability=…: the node looks the capability
// up (GET /things?capability=), as a consumer that uses it would.
func (p *wanPeer) use(w http.ResponseWriter, r *http.Request) {
	q := url.Values{"capability": {r.URL.Query().Get("capability")}}
	if err := p.callNode(r.Context(), p.home, http.MethodGet, "/things?"+q.Encode(), nil, nil); err != nil {
		fail(w, err)
		return
	}
	writeOK(w)
}

// nodeStats is what a node's metrics say about its cost: heap in use and
// resident memory (bytes), the heap after a GC (live, when asked for), the
// Things its directory holds, and the gossip message bytes it received, by
// topic kind.
type nodeStats struct {
	Heap        float64            `json:"heap"`
	Live        float64            `json:"live,omitempty"`
	RSS         float64            `json:"rss"`
	Things      float64            `json:"things"`
	GossipBytes map[string]float64 `json:"gossipBytes"`
	At          int64              `json:"at"`
}

// nodeGet GETs path from the local node's API; a status other than 200
// is an error. The caller closes the body.
func (p *wanPeer) nodeGet(ctx context.Context, path string) (*http.Response, error) {
	req, err := p.nodeRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.api.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp, nil
}

// stats serves GET /lmos/stats[?gc]: the local node's nodeStats, read from
// its /metrics. With gc, the node first runs a GC (its heap profile's
// gc=1, the profile discarded), and Live is its heap allocated right
// after: the live heap, counted exactly where a heap profile samples.
func (p *wanPeer) stats(w http.ResponseWriter, r *http.Request) {
	gc := r.URL.Query().Has("gc")
	if gc {
		resp, err := p.nodeGet(r.Context(), "/debug/pprof/heap?gc=1")
		if err != nil {
			fail(w, err)
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			fail(w, err)
			return
		}
	}
	resp, err := p.nodeGet(r.Context(), "/metrics")
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		fail(w, fmt.Errorf("GET /metrics: %w", err))
		return
	}
	st := nodeStats{GossipBytes: map[string]float64{}, At: time.Now().UnixNano()}
	sum := func(name string, each func(labels map[string]string, v float64)) {
		f := families[name]
		if f == nil {
			return
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			each(labels, v)
		}
	}
	sum("go_memstats_heap_inuse_bytes", func(_ map[string]string, v float64) { st.Heap = v })
	if gc {
		sum("go_memstats_heap_alloc_bytes", func(_ map[string]string, v float64) { st.Live = v })
	}
	sum("process_resident_memory_bytes", func(_ map[string]string, v float64) { st.RSS = v })
	sum("lmos_directory_things", func(_ map[string]string, v float64) { st.Things += v })
	sum("lmos_gossip_received_bytes_total", func(l map[string]string, v float64) { st.GossipBytes[l["topic"]] += v })
	writeJSON(w, st)
}

// heap serves POST /lmos/heap[?stage=idle]: the local node's heap
// profile, taken after a GC (the node runs with pprof on in the scale
// lab), is written to heap.pb.gz (heap-idle.pb.gz) in its home; the
// answer names the file.
func (p *wanPeer) heap(w http.ResponseWriter, r *http.Request) {
	name := "heap.pb.gz"
	if r.URL.Query().Get("stage") == "idle" {
		name = "heap-idle.pb.gz"
	}
	p.profile(w, r, "/debug/pprof/heap?gc=1", name)
}

// cpu serves POST /lmos/cpu?seconds=S: the local node's CPU profile over
// the next S seconds (at most 60) is written to cpu.pb.gz in its home; the
// answer names the file.
func (p *wanPeer) cpu(w http.ResponseWriter, r *http.Request) {
	sec, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil || sec < 1 || sec > 60 {
		fail(w, fmt.Errorf("seconds %q: want 1 to 60", r.URL.Query().Get("seconds")))
		return
	}
	p.profile(w, r, "/debug/pprof/profile?seconds="+strconv.Itoa(sec), "cpu.pb.gz")
}

// profile writes the local node's profile at path to name in its home.
func (p *wanPeer) profile(w http.ResponseWriter, r *http.Request, path, name string) {
	resp, err := p.nodeGet(r.Context(), path)
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	file := filepath.Join(p.home, name)
	out, err := os.Create(file)
	if err == nil {
		_, err = io.Copy(out, resp.Body)
		err = errors.Join(err, out.Close())
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]string{"file": file})
}

// kill serves POST /lmos/kill: the node is killed (SIGKILL, no goodbye)
// and the raw host closed, as a machine that loses power.
func (p *wanPeer) kill(w http.ResponseWriter, _ *http.Request) {
	pid, err := nodePID(p.home)
	if err != nil {
		fail(w, err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		fail(w, fmt.Errorf("kill %d: %w", pid, err))
		return
	}
	p.stopRaw()
	writeJSON(w, map[string]int{"pid": pid})
}

// writeResults writes the nodes' samples for the raw hosts' run.
func writeResults(file string, r *apartResults) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// readResults reads what the nodes' run wrote.
func readResults(file string) (*apartResults, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("the nodes' samples: %w", err)
	}
	var r apartResults
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the nodes' samples: %s: %w", file, err)
	}
	return &r, nil
}

// nodePID finds the `lmosnode up --home home` process in /proc.
func nodePID(home string) (int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		args, err := p.CmdLine()
		if err != nil || len(args) < 2 || filepath.Base(args[0]) != "lmosnode" || args[1] != "up" {
			continue
		}
		if i := slices.Index(args, "--home"); i >= 0 && i+1 < len(args) && args[i+1] == home {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("no `lmosnode up --home %s` process", home)
}

// scaleConfig is the scale lab's load: things Things per node at the end,
// the first stage growth times smaller, over caps capabilities; kill is
// the share of nodes killed at once after the loaded rows.
type scaleConfig struct {
	things, growth, caps int
	kill                 float64
	window, settle       time.Duration
	samples, cold        int
}

// stats returns the nodeStats of every node alive, by index - 1; with gc,
// each node's live heap too (after a GC it runs first).
func (d *driver) stats(ctx context.Context, gc bool) (map[int]nodeStats, error) {
	var mu sync.Mutex
	out := map[int]nodeStats{}
	var q url.Values
	if gc {
		q = url.Values{"gc": {""}}
	}
	err := d.each(func(k int) error {
		var s nodeStats
		err := d.ctl(ctx, k, http.MethodGet, "/lmos/stats", q, &s)
		mu.Lock()
		out[k] = s
		mu.Unlock()
		return err
	})
	return out, err
}

// scale runs the scale lab's steps after ready and links. The raw hosts'
// run of a lab that measures them apart has nothing to load: it takes
// the rows' baselines on the same links, killing the same share.
func (d *driver) scale(ctx context.Context, sc scaleConfig) error {
	if d.lmosOn {
		idle, err := d.stats(ctx, true)
		if err != nil {
			return err
		}
		d.report("idle, no Things", idle, nil, 0)
		d.heapProfiles(ctx, "idle")
		first := max(sc.things/sc.growth, 1)
		for _, upto := range []int{first, sc.things} {
			if err := d.load(ctx, sc, upto); err != nil {
				return err
			}
		}
		d.heapProfiles(ctx, "")
	} else {
		// The raw hosts were linked a moment ago, the nodes minutes before
		// their rows: let the meshes graft and the DHT settle first (in the
		// first 50-node run raw propagation took 0.7–1.5 s right after
		// linking, 64–118 ms a minute later).
		fmt.Printf("raw hosts idle for %s before the rows\n", sc.window)
		time.Sleep(sc.window)
	}
	// Where the machine's CPU goes while the loaded propagation samples
	// run (the rows' bound at 50 nodes).
	done := d.profileCPU(ctx, "during the propagation samples")
	err := d.propagation(ctx, sc.samples)
	done()
	if err != nil {
		return err
	}
	if err := d.coldDiscovery(ctx, 5, sc.cold); err != nil {
		return err
	}
	if sc.kill <= 0 {
		return nil
	}
	if err := d.killShare(ctx, sc.kill); err != nil {
		return err
	}
	// Let the survivors notice: their connections to the dead reset, the
	// DHT's and gossipsub's next rounds run without them.
	time.Sleep(10 * time.Second)
	if err := d.propagation(ctx, sc.samples); err != nil {
		return err
	}
	return d.coldDiscovery(ctx, 5, sc.cold)
}

// profiled names the nodes whose profiles the lab takes, by role: the
// first directory node and the first light node, or node 1 when all are
// alike.
func (d *driver) profiled() map[string]int {
	if d.dirNodes == 0 {
		return map[string]int{"node": 1}
	}
	nodes := map[string]int{"directory": 1}
	if d.dirNodes < d.n {
		nodes["light"] = d.dirNodes + 1
	}
	return nodes
}

// heapProfiles has the first directory node and the first light node
// (or node 1, when all are alike) write their heap profile, idle before
// the load or loaded (stage "idle" or ""), and prints where each is: the
// lab prints their totals and top entries.
func (d *driver) heapProfiles(ctx context.Context, stage string) {
	for role, k := range d.profiled() {
		var out struct {
			File string `json:"file"`
		}
		if err := d.ctl(ctx, k, http.MethodPost, "/lmos/heap", url.Values{"stage": {stage}}, &out); err != nil {
			fmt.Printf("heap profile of node %d: %v\n", k, err)
			continue
		}
		fmt.Printf("heap profile: %s node %d: %s\n", role, k, out.File)
	}
}

// load has every node publish its Things up to upto, waits until the
// directories settle, and reports the nodes' cost loaded and then idle
// for a window.
func (d *driver) load(ctx context.Context, sc scaleConfig, upto int) error {
	before, err := d.stats(ctx, false)
	if err != nil {
		return err
	}
	t0 := time.Now()
	from := d.loaded
	err = d.each(func(k int) error {
		q := url.Values{"from": {strconv.Itoa(from)}, "to": {strconv.Itoa(upto)}, "caps": {strconv.Itoa(sc.caps)}}
		return d.ctl(ctx, k, http.MethodPost, "/lmos/bulk", q, nil)
	})
	if err != nil {
		return err
	}
	d.loaded = upto
	published := time.Since(t0)
	fmt.Printf("%d nodes published Things %d..%d each in %.1fs\n", len(d.alive), from, upto-1, published.Seconds())
	loaded, stable, err := d.settle(ctx, sc.settle)
	if err != nil {
		return err
	}
	settled := stable.Sub(t0)
	fmt.Printf("directories held their final count %.1fs after the first publication (published in %.1fs)\n", settled.Seconds(), published.Seconds())
	if d.dirNodes > 0 {
		if st, err := d.complete(ctx, sc.settle, upto*len(d.alive), t0); err == nil {
			loaded = st
		} else {
			fmt.Println(err)
		}
	}
	time.Sleep(sc.window)
	idle, err := d.stats(ctx, true)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d Things in the federation (%d per node)", upto*len(d.alive), upto)
	d.report(what, loaded, before, settled)
	d.report(what+", idle", idle, loaded, sc.window)
	return nil
}

// complete waits, polling every 5 s for at most limit, until every
// directory node holds all the want Things of the federation: gossip that
// lost a record is repaired from the publisher's presence beats (two beat
// intervals), after the directories seemed settled. It returns the last
// stats.
func (d *driver) complete(ctx context.Context, limit time.Duration, want int, t0 time.Time) (map[int]nodeStats, error) {
	var last map[int]nodeStats
	err := pollEvery(5*time.Second, limit, "the directory nodes to hold every Thing", func() (bool, string) {
		st, err := d.stats(ctx, false)
		if err != nil {
			return false, err.Error()
		}
		last = st
		for k := 1; k <= d.dirNodes; k++ {
			if s, ok := st[k]; ok && s.Things < float64(want) {
				return false, fmt.Sprintf("directory node %d holds %.0f of %d", k, s.Things, want)
			}
		}
		return true, ""
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("directory nodes held all %d Things %.1fs after the first publication\n", want, time.Since(t0).Seconds())
	return last, nil
}

// settle polls the nodes' directories every 5 s until the Things they hold
// in all did not change for three polls in a row, and returns the last
// stats and when the first of those polls was taken.
func (d *driver) settle(ctx context.Context, limit time.Duration) (map[int]nodeStats, time.Time, error) {
	var last map[int]nodeStats
	var since time.Time
	prev, same := -1.0, 0
	err := pollEvery(5*time.Second, limit, "the directories to settle", func() (bool, string) {
		st, err := d.stats(ctx, false)
		if err != nil {
			return false, err.Error()
		}
		last = st
		var total float64
		for _, s := range st {
			total += s.Things
		}
		if total == prev {
			same++
		} else {
			same, since = 0, time.Now()
		}
		prev = total
		fmt.Printf("  %.0f Things held over %d nodes\n", total, len(st))
		return same >= 3, fmt.Sprintf("%.0f Things held", total)
	})
	return last, since, err
}

// report prints the scale rows of one moment, for the light and the
// directory nodes apart when the lab has both.
func (d *driver) report(what string, st, earlier map[int]nodeStats, span time.Duration) {
	if d.dirNodes == 0 {
		d.reportNodes(what, st, earlier, span)
		return
	}
	light, dir := map[int]nodeStats{}, map[int]nodeStats{}
	for k, s := range st {
		if k <= d.dirNodes {
			dir[k] = s
		} else {
			light[k] = s
		}
	}
	d.reportNodes(what+", "+d.others+" nodes", light, earlier, span)
	d.reportNodes(what+", directory nodes", dir, earlier, span)
}

// reportNodes prints the scale rows of nodes st: per-node heap, RSS and
// Things held (p50 and max), and, against earlier stats from span before,
// the gossip bytes each node received per second by topic kind.
func (d *driver) reportNodes(what string, st, earlier map[int]nodeStats, span time.Duration) {
	var heap, live, rss, held []float64
	rates := map[string][]float64{}
	for k, s := range st {
		heap, rss, held = append(heap, s.Heap/1e6), append(rss, s.RSS/1e6), append(held, s.Things)
		if s.Live > 0 {
			live = append(live, s.Live/1e6)
		}
		e, ok := earlier[k]
		if !ok || span <= 0 {
			continue
		}
		secs := float64(s.At-e.At) / 1e9
		for kind, b := range s.GossipBytes {
			rates[kind] = append(rates[kind], (b-e.GossipBytes[kind])/secs)
		}
	}
	c := fmt.Sprintf("scale N=%d%s: %s", len(d.alive), d.suffix, what)
	for _, m := range []struct {
		metric, unit string
		v            []float64
	}{{"heap", "MB", heap}, {"heap after a GC", "MB", live}, {"RSS", "MB", rss}, {"Things held", "Things", held}} {
		if len(m.v) == 0 {
			continue
		}
		benchtab.Print(benchtab.Row{Row: "S", Case: c, Metric: m.metric + " p50", Unit: m.unit, LMOS: pct(m.v, 50)})
		benchtab.Print(benchtab.Row{Row: "S", Case: c, Metric: m.metric + " max", Unit: m.unit, LMOS: pct(m.v, 100)})
	}
	for _, kind := range []string{"announce", "presence", "shard"} {
		if v := rates[kind]; len(v) > 0 {
			benchtab.Print(benchtab.Row{Row: "S", Case: c, Metric: kind + " bytes/s p50", Unit: "B/s", LMOS: pct(v, 50)})
			benchtab.Print(benchtab.Row{Row: "S", Case: c, Metric: kind + " bytes/s max", Unit: "B/s", LMOS: pct(v, 100)})
		}
	}
	if span > 0 && earlier != nil {
		benchtab.Print(benchtab.Row{Row: "S", Case: c, Metric: "span", Unit: "s", LMOS: span.Seconds()})
	}
}

// killShare kills share of the nodes at once, spread over the lab (never
// node 1, the one every row can start from), and keeps only the others.
func (d *driver) killShare(ctx context.Context, share float64) error {
	n := int(share * float64(len(d.alive)))
	var dead []int
	for i := 1; i <= n; i++ {
		dead = append(dead, d.alive[i*len(d.alive)/(n+1)])
	}
	dead = slices.DeleteFunc(slices.Compact(dead), func(k int) bool { return k == 1 })
	errs := make([]error, len(dead))
	var wg sync.WaitGroup
	kill := "/lmos/kill" // the node, and the raw host if one runs
	if !d.lmosOn {
		kill = "/raw/stop"
	}
	for i, k := range dead {
		wg.Go(func() { errs[i] = d.ctl(ctx, k, http.MethodPost, kill, nil, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.alive = slices.DeleteFunc(d.alive, func(k int) bool { return slices.Contains(dead, k) })
	d.suffix = fmt.Sprintf(", %d of %d killed", len(dead), d.n)
	fmt.Printf("killed the %s of namespaces %v at once; %d alive\n", d.kinds(), dead, len(d.alive))
	return nil
}

// pollEvery runs cond every interval until it holds, for at most limit.
func pollEvery(interval, limit time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (%s)", what, limit, why)
		}
		time.Sleep(interval)
	}
}
