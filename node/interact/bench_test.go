package interact

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// BenchmarkRequestReply compares one readProperty across two nodes (a
// consumer node's Client → libp2p stream → the owner's Server → Engine →
// backend) with a direct HTTP call to the same backend. It reports the
// latency percentiles of the sequential runs and, for the parallel ones,
// the throughput.
//
//	go test -run '^$' -bench RequestReply -benchtime 3s ./node/interact/
func BenchmarkRequestReply(b *testing.B) {
	st := newTestState(b)
	svc := newTestService(b, st)
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(httpClient.CloseIdleConnections)

	newEngine := func(backend Backend) *Engine {
		e, err := NewEngine(oneThing(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		e.SetBackend(testThingID, backend)
		b.Cleanup(func() { e.Close() })
		return e
	}
	hb, err := NewHTTPBackend(svc.server.URL, HTTPBackendOptions{Client: httpClient})
	if err != nil {
		b.Fatal(err)
	}
	p2pHTTP, _, _ := overP2P(b, newEngine(hb), TransportOptions{}, manyStreams)
	p2pSDK, _, _ := overP2P(b, newEngine(newSDKThing(b, st)), TransportOptions{}, manyStreams)
	p2pSDKCBOR, _, _ := overP2P(b, newEngine(newSDKThing(b, st)), TransportOptions{Codec: proto.CBOR}, manyStreams)

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
	for _, c := range cases {
		b.Run(c.name+"/sequential", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if err := c.op(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8)
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "ops/s")
		})
	}
}
