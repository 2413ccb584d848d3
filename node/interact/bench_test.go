package interact

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/proto"
)

// benchConcurrency is the number of goroutines of the throughput figures.
const benchConcurrency = 64

// BenchmarkRequestReply compares one readProperty across two nodes (a
// consumer node's Client → libp2p stream → the owner's Server → Engine →
// backend) with a direct HTTP call to the same backend. It reports the
// latency percentiles of the sequential runs and, for the parallel ones,
// the throughput at benchConcurrency goroutines, and prints the
// benchtab rows of row 3 of the performance table.
//
//	go test -run '^$' -bench RequestReply -benchtime 3s ./node/interact/
func BenchmarkRequestReply(b *testing.B) {
	st := newTestState(b)
	svc := newTestService(b, st)
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(httpClient.CloseIdleConnections)

	newEngine := func(backend Backend) *Engine {
		e, err := NewEngine(EngineDeps{Things: oneThing(b)}, EngineConfig{})
		if err != nil {
			b.Fatal(err)
		}
		e.SetBackend(testThingID, backend)
		b.Cleanup(func() { e.Close() })
		return e
	}
	hb, err := NewHTTPBackend(HTTPBackendConfig{URL: svc.server.URL}, WithHTTPClient(httpClient))
	if err != nil {
		b.Fatal(err)
	}
	p2pHTTP, _, _ := overP2P(b, newEngine(hb), TransportConfig{}, manyStreams)
	p2pSDK, _, _ := overP2P(b, newEngine(newSDKThing(b, st)), TransportConfig{}, manyStreams)
	p2pSDKCBOR, _, _ := overP2PWith(b, newEngine(newSDKThing(b, st)), TransportConfig{}, []Option{WithCodec(proto.CBOR)}, manyStreams)

	direct := func() error {
		resp, err := httpClient.Get(svc.server.URL + "/properties/temperature")
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	viaInvoker := func(inv Invoker) func() error {
		return func() error {
			s, err := inv.Invoke(context.Background(), request(proto.MsgReadProperty, "temperature"))
			if err != nil {
				return err
			}
			for m := range s.Replies() {
				if m.Type != proto.MsgPropertyReading {
					b.Fatalf("reply: %+v", m)
				}
			}
			return nil
		}
	}
	cases := []struct {
		name string
		op   func() error
	}{
		{"direct-http", direct},
		{"libp2p-json+http-backend", viaInvoker(p2pHTTP)},
		{"libp2p-json+go-sdk", viaInvoker(p2pSDK)},
		{"libp2p-cbor+go-sdk", viaInvoker(p2pSDKCBOR)},
	}
	type figures struct {
		p50, p99 time.Duration
		opsPerS  float64
	}
	figs := make([]figures, len(cases))
	for i, c := range cases {
		f := &figs[i]
		b.Run(c.name+"/sequential", func(b *testing.B) {
			lat := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				t0 := time.Now()
				if err := c.op(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			f.p50, f.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
			b.ReportMetric(float64(f.p50.Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(f.p99.Nanoseconds())/1e3, "p99-µs")
		})
		// benchConcurrency goroutines share b.N calls
		b.Run(c.name+"/parallel", func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			t0 := time.Now()
			for range benchConcurrency {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := c.op(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			f.opsPerS = float64(b.N) / time.Since(t0).Seconds()
			b.ReportMetric(f.opsPerS, "ops/s")
		})
	}
	base := figs[0]
	if base.p50 == 0 || base.opsPerS == 0 {
		return // filtered out by -bench
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	const baseline = "direct HTTP to the backend"
	for i, c := range cases[1:] {
		f := figs[i+1]
		if f.p50 == 0 || f.opsPerS == 0 {
			continue
		}
		label := "interact Client→Server, one host pair: " + c.name
		p50Target, opsTarget := "", ""
		if c.name == "libp2p-json+http-backend" { // the Go SDK cases have no HTTP call
			p50Target, opsTarget = "≤ 2.5×", "≥ 0.4×"
		}
		benchtab.Print(benchtab.Row{Row: "3", Case: label, Metric: "p50 (c=1)", Unit: "µs", LMOS: us(f.p50), Base: us(base.p50), Baseline: baseline, Target: p50Target})
		benchtab.Print(benchtab.Row{Row: "3", Case: label, Metric: "p99 (c=1)", Unit: "µs", LMOS: us(f.p99), Base: us(base.p99), Baseline: baseline})
		benchtab.Print(benchtab.Row{Row: "3", Case: label, Metric: "throughput (c=64)", Unit: "ops/s", LMOS: f.opsPerS, Base: base.opsPerS, Baseline: baseline, Target: opsTarget})
	}
}
