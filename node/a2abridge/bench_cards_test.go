package a2abridge

// The cost of the node's agent card on a node full of sybil agents
// (issue 24: after a sybil run the card was 15 MB and 20 parallel GETs
// took a node from 646 MB to 3.1 GB of RSS):
//
//	go test -run '^$' -bench NodeCardSybil -benchtime 5x ./node/a2abridge
//
// 20 identities with 20 agents each, every description 56 KiB (a TD is
// at most 64 KiB); each round fires 20 parallel GETs at the card and
// reports the card's size, the mean time of one GET, and the growth of
// the live heap and of the process's RSS during the round over what they
// were before it (sampled every 2 ms). "changed" rounds publish one more
// agent first, so that the card is rendered again; "same" rounds do not.
//
// Before the cache (card rendered per GET, 256 skills, no byte budget):
// 14,250 KiB, 35 s per GET, heap +2.2 GB, RSS +390–456 MB. After: 249
// KiB, 17–120 ms per GET (changed), 5–25 ms (same), heap +7.5 MB, RSS
// +0.3 MB (docs/security.md).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func BenchmarkNodeCardSybil(b *testing.B) {
	tn := newTestNode(b)
	tn.ownAgent(b, "urn:own:0", "Own")
	tn.sybilAgents(b, 20, 20, 56<<10)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	b.Cleanup(hc.CloseIdleConnections)
	for _, changed := range []bool{true, false} {
		name := map[bool]string{true: "changed", false: "same"}[changed]
		b.Run(name, func(b *testing.B) {
			var heapMB, rssMB, getMS, size float64
			for i := range b.N {
				if changed {
					tn.ownAgent(b, fmt.Sprintf("urn:own:%s:%d", name, i), "Own")
				}
				r := cardRound(b, hc, tn.srv.URL+WellKnownCard, 20)
				heapMB, rssMB = max(heapMB, r.heapMB), max(rssMB, r.rssMB)
				getMS += r.getMS / float64(b.N)
				size = r.bytes
			}
			b.ReportMetric(size/1024, "card-KiB")
			b.ReportMetric(cardSkills(b, hc, tn.srv.URL+WellKnownCard), "skills")
			b.ReportMetric(getMS, "ms/GET")
			b.ReportMetric(heapMB, "peak-heap-MB")
			b.ReportMetric(rssMB, "peak-RSS-MB")
		})
	}
}

// cardSkills is the number of skills the card at url lists.
func cardSkills(b *testing.B, hc *http.Client, url string) float64 {
	b.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var c AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		b.Fatal(err)
	}
	return float64(len(c.Skills))
}

type roundFigures struct{ bytes, getMS, heapMB, rssMB float64 }

// cardRound fires n parallel GETs at url and measures them.
func cardRound(b *testing.B, hc *http.Client, url string, n int) roundFigures {
	b.Helper()
	runtime.GC()
	heap0, rss0 := heapBytes(), rssBytes()
	var peakHeap, peakRSS atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if h := heapBytes(); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
			if r := rssBytes(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	var wg sync.WaitGroup
	var total atomic.Int64
	var size atomic.Int64
	for range n {
		wg.Go(func() {
			start := time.Now()
			resp, err := hc.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			got, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Errorf("GET %s: %s, %v", url, resp.Status, err)
			}
			total.Add(int64(time.Since(start)))
			size.Store(got)
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	growth := func(peak, base uint64) float64 {
		if peak < base {
			return 0
		}
		return float64(peak-base) / 1e6
	}
	return roundFigures{bytes: float64(size.Load()), getMS: float64(total.Load()) / float64(n) / 1e6,
		heapMB: growth(peakHeap.Load(), heap0), rssMB: growth(peakRSS.Load(), rss0)}
}

// heapBytes is the bytes of heap objects, live and not yet swept.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rssBytes is the process's resident set size (0 without /proc).
func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
