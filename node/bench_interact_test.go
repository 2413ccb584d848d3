package node_test

// Rows 3 and 4 of the performance table (scripts/bench.sh, issue 6):
//
//	go test -run '^$' -bench 'RequestReply|Stream' ./node
//
// Row 3, cross-node request-reply: node A owns a Thing whose backend is an
// HTTP service (httptest, on 127.0.0.1); a consumer reads one of its
// properties through node B over B's HTTP binding, B's WebSocket
// lmosprotocol endpoint and B's libp2p SDK path (B's Invoker → Client →
// libp2p → A's Server → Engine → HTTP backend). Baseline: a direct HTTP
// call to the same backend, in the same run. Two raw libp2p request-reply
// cases (a new stream per call; one stream reused) show the floor the
// libp2p hop puts under the SDK path, and three zero-work floors the
// floor of each whole path: the same hops (consumer → B over HTTP, a
// WebSocket or a Go call; B → A over a reused stream between bare libp2p
// hosts; A → the backend over keep-alive HTTP) with no LMOS work at all.
//
// Row 4, streaming: a streaming session (invokeAction "stream": true) in
// which A's Thing sends N output chunks to a consumer on B, against a raw
// libp2p stream between two bare hosts carrying N length-prefixed messages
// of the same size.
//
// Every figure is measured within one benchmark run; the parent benchmark
// prints the benchtab rows after its sub-benchmarks.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// brConcurrency is the number of goroutines of the throughput figures.
const brConcurrency = 64

// brStreamChunks is the number of output chunks of one streaming session
// (row 4), brChunkSize the size of each chunk's output string.
const (
	brStreamChunks = 1000
	brChunkSize    = 100
)

// brFigures are one case's results: latency at concurrency 1, throughput
// at brConcurrency.
type brFigures struct {
	p50, p99 time.Duration
	opsPerS  float64
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// brSequential runs op in b.Loop and records the latency percentiles.
func brSequential(b *testing.B, op func() error, f *brFigures) {
	lat := make([]time.Duration, 0, 1<<16)
	cpu0 := brCPUTime()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	brReportCPU(b, cpu0, len(lat))
	slices.Sort(lat)
	f.p50, f.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(us(f.p50), "p50-µs")
	b.ReportMetric(us(f.p99), "p99-µs")
}

// brReportCPU reports the process's CPU time per operation since cpu0: a
// figure that, unlike latency and throughput, hardly moves when other
// programs load the machine.
func brReportCPU(b *testing.B, cpu0 time.Duration, ops int) {
	if cpu := brCPUTime(); cpu > 0 && ops > 0 {
		b.ReportMetric(us(cpu-cpu0)/float64(ops), "cpu-µs/op")
	}
}

// brParallel runs b.N calls of op on brConcurrency goroutines (goroutine g
// calls op(g)) and records the throughput.
func brParallel(b *testing.B, op func(g int) error, f *brFigures) {
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := brCPUTime()
	t0 := time.Now()
	for g := range brConcurrency {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(g); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	brReportCPU(b, cpu0, b.N)
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	f.opsPerS = float64(b.N) / el.Seconds()
	b.ReportMetric(f.opsPerS, "ops/s")
}

// brTD is a Tool with one read-only number property and one action.
func brTD(b *testing.B, id string) *lmosproto.TD {
	b.Helper()
	form := func(n string) []any { return []any{map[string]any{"href": "https://bench.invalid/" + n}} }
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Bench " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"properties": map[string]any{
			"temperature": map[string]any{"type": "number", "readOnly": true, "forms": form("temperature")},
		},
		"actions": map[string]any{
			"count": map[string]any{"input": map[string]any{"type": "integer"}, "forms": form("count")},
		},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		b.Fatalf("bench TD: %v", err)
	}
	return td
}

// brPair starts the owner node A and the consumer node B, linked.
func brPair(b *testing.B) (a, c *node.Node) {
	b.Helper()
	tn := testnet.New(b, 2, testnet.Options{})
	tn.Link(1, 0)
	return tn.Nodes[0], tn.Nodes[1]
}

// brWaitKnown waits until the consumer node knows the Thing.
func brWaitKnown(b *testing.B, consumer *node.Node, id string) {
	b.Helper()
	testnet.WaitFor(b, "consumer learns the Thing", 20*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
}

// brPublish publishes td on n with backend as its HTTP backend, through
// the admin API (as `lmosnode publish --backend` does).
func brPublish(b *testing.B, hc *http.Client, n *node.Node, td *lmosproto.TD, backend string) {
	b.Helper()
	raw, err := json.Marshal(td)
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"td": json.RawMessage(raw), "backend": backend})
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+n.APIAddr()+"/api/v1/things", strings.NewReader(string(body)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+n.APIToken())
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Fatalf("publish: %s: %s", resp.Status, msg)
	}
}

// brBackend is the Thing's HTTP service: GET /properties/temperature.
func brBackend(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/properties/temperature" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "21.5")
	}))
	b.Cleanup(srv.Close)
	return srv
}

func brHTTPClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConns: 4 * brConcurrency, MaxIdleConnsPerHost: 2 * brConcurrency}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func brGet(hc *http.Client, target string) error {
	resp, err := hc.Get(target)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return err
}

// brWS is one consumer socket on a node's /ws endpoint.
type brWS struct {
	c  *websocket.Conn
	id string
}

func brDialWS(b *testing.B, n *node.Node, id string) *brWS {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+n.APIAddr()+"/ws", &websocket.DialOptions{Subprotocols: []string{lmosproto.WebSocketSubprotocol}})
	if err != nil {
		b.Fatal(err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	c.SetReadLimit(lmosproto.MaxMessageSize)
	b.Cleanup(func() { _ = c.Close(websocket.StatusNormalClosure, "") })
	return &brWS{c: c, id: id}
}

// read sends one readProperty and waits for its propertyReading.
func (w *brWS) read(ctx context.Context) error {
	req := lmosproto.NewMessage(w.id, lmosproto.MsgReadProperty)
	req.Name = "temperature"
	data, err := lmosproto.JSON.Marshal(req)
	if err != nil {
		return err
	}
	if err := w.c.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	_, data, err = w.c.Read(ctx)
	if err != nil {
		return err
	}
	var m lmosproto.Message
	if err := lmosproto.JSON.Unmarshal(data, &m); err != nil {
		return err
	}
	if m.Type != lmosproto.MsgPropertyReading || m.CorrelationID != req.MessageID {
		return fmt.Errorf("ws reply: %s %s", m.Type, m.Detail)
	}
	return nil
}

// brInvokeRead reads the property through an Invoker (the SDK path).
func brInvokeRead(inv interact.Invoker, id string) error {
	req := lmosproto.NewMessage(id, lmosproto.MsgReadProperty)
	req.Name = "temperature"
	s, err := inv.Invoke(context.Background(), req)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	for m := range s.Replies() {
		if m.Type != lmosproto.MsgPropertyReading {
			return fmt.Errorf("reply: %s %s", m.Type, m.Detail)
		}
	}
	return nil
}

// brRawHost is a bare go-libp2p host with the node's TCP, Noise and yamux,
// listening on 127.0.0.1 only.
func brRawHost(b *testing.B) host.Host {
	b.Helper()
	h, err := libp2p.New(
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.DisableMetrics(),
		libp2p.DisableRelay(),
		// no limits: the floor of the transport, not of a limiter
		libp2p.ResourceManager(&network.NullResourceManager{}),
	)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// brRawPair returns two bare hosts, the first connected to the second.
func brRawPair(b *testing.B) (client, server host.Host) {
	b.Helper()
	client, server = brRawHost(b), brRawHost(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Connect(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}); err != nil {
		b.Fatal(err)
	}
	return client, server
}

const (
	brEchoProto   = protocol.ID("/lmos-bench/echo/1.0.0")
	brStreamProto = protocol.ID("/lmos-bench/stream/1.0.0")
)

// brFrameServer answers every frame on a stream of proto with answer's
// frame, until the stream ends.
func brFrameServer(h host.Host, proto protocol.ID, answer func([]byte) ([]byte, error)) {
	h.SetStreamHandler(proto, func(s network.Stream) {
		defer s.Close()
		br := bufio.NewReader(s)
		for {
			p, err := lmosproto.ReadFrame(br, lmosproto.MaxMessageSize)
			if err != nil {
				return
			}
			out, err := answer(p)
			if err != nil || lmosproto.WriteFrame(s, out) != nil {
				_ = s.Reset()
				return
			}
		}
	})
}

// brEchoServer answers every frame on a stream with the same frame, until
// the stream ends.
func brEchoServer(h host.Host) {
	brFrameServer(h, brEchoProto, func(p []byte) ([]byte, error) { return p, nil })
}

// brRawCall is one request-reply on a new stream: write a frame, close
// the write side, read the answer.
func brRawCall(h host.Host, to peer.ID, payload []byte) error {
	s, err := h.NewStream(context.Background(), to, brEchoProto)
	if err != nil {
		return err
	}
	if err := lmosproto.WriteFrame(s, payload); err != nil {
		_ = s.Reset()
		return err
	}
	_ = s.CloseWrite()
	if _, err := lmosproto.ReadFrame(bufio.NewReader(s), lmosproto.MaxMessageSize); err != nil {
		_ = s.Reset()
		return err
	}
	return s.Close()
}

// brRawConn is a stream kept open for many request-replies.
type brRawConn struct {
	s  network.Stream
	br *bufio.Reader
}

func (c *brRawConn) call(payload []byte) error {
	if err := lmosproto.WriteFrame(c.s, payload); err != nil {
		return err
	}
	_, err := lmosproto.ReadFrame(c.br, lmosproto.MaxMessageSize)
	return err
}

const brFloorProto = protocol.ID("/lmos-bench/floor/1.0.0")

// brFloorOwner makes h a zero-work owner: each frame on a stream is a
// backend URL, answered with the body of a GET to it (keep-alive client),
// until the stream ends. It is node A of the floor cases, without any
// LMOS work.
func brFloorOwner(h host.Host, hc *http.Client) {
	brFrameServer(h, brFloorProto, func(target []byte) ([]byte, error) {
		resp, err := hc.Get(string(target))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	})
}

// brFloorPool is node B's side of the floor cases: streams to the
// zero-work owner, reused, one per call in flight.
type brFloorPool struct {
	free   chan *brRawConn
	target []byte
}

func newBrFloorPool(b *testing.B, from host.Host, to peer.ID, target string) *brFloorPool {
	b.Helper()
	fp := &brFloorPool{free: make(chan *brRawConn, brConcurrency), target: []byte(target)}
	for range brConcurrency {
		s, err := from.NewStream(context.Background(), to, brFloorProto)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Reset() })
		c := &brRawConn{s: s, br: bufio.NewReader(s)}
		if err := c.call(fp.target); err != nil { // negotiate now
			b.Fatal(err)
		}
		fp.free <- c
	}
	return fp
}

// call forwards one request to the owner and returns the backend's body.
func (fp *brFloorPool) call() ([]byte, error) {
	c := <-fp.free
	defer func() { fp.free <- c }()
	if err := lmosproto.WriteFrame(c.s, fp.target); err != nil {
		return nil, err
	}
	return lmosproto.ReadFrame(c.br, lmosproto.MaxMessageSize)
}

// brFloorHTTP is node B's HTTP binding without LMOS work: each request is
// forwarded over the pool and answered with the backend's body.
func brFloorHTTP(b *testing.B, fp *brFloorPool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := fp.call()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// brFloorWS is node B's WebSocket endpoint without LMOS work: each
// message is forwarded over the pool and answered with the backend's body.
func brFloorWS(b *testing.B, fp *brFloorPool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, _, err := c.Read(r.Context())
			if err != nil {
				return
			}
			body, err := fp.call()
			if err != nil || c.Write(r.Context(), websocket.MessageText, body) != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// brFloorSocket is one consumer socket on brFloorWS.
func brFloorSocket(b *testing.B, srv *httptest.Server) *websocket.Conn {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	b.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// BenchmarkRequestReplyCrossNode measures row 3: one readProperty of a
// Thing with an HTTP backend on node A, called through node B.
func BenchmarkRequestReplyCrossNode(b *testing.B) {
	backend := brBackend(b)
	hc := brHTTPClient(b)
	a, c := brPair(b)
	id := testnet.UniqueID(b)
	brPublish(b, hc, a, brTD(b, id), backend.URL)
	brWaitKnown(b, c, id)

	direct := backend.URL + "/properties/temperature"
	viaHTTP := "http://" + c.APIAddr() + "/things/" + url.PathEscape(id) + "/properties/temperature"
	sockets := make([]*brWS, brConcurrency)
	for i := range sockets {
		sockets[i] = brDialWS(b, c, id)
	}
	ctx := context.Background()
	inv := c.Invoker()

	// raw libp2p floor: bare hosts, the payload of a readProperty request
	rc, rs := brRawPair(b)
	brEchoServer(rs)
	probe := lmosproto.NewMessage(id, lmosproto.MsgReadProperty)
	probe.Name = "temperature"
	payload, err := lmosproto.JSON.Marshal(probe)
	if err != nil {
		b.Fatal(err)
	}
	// zero-work floors of the three paths: the same hops, no LMOS work
	fc, fs := brRawPair(b)
	brFloorOwner(fs, brHTTPClient(b))
	floorPool := newBrFloorPool(b, fc, fs.ID(), direct)
	floorHTTP := brFloorHTTP(b, floorPool).URL + "/things/x/properties/temperature"
	floorWS := brFloorWS(b, floorPool)
	floorSockets := make([]*websocket.Conn, brConcurrency)
	for i := range floorSockets {
		floorSockets[i] = brFloorSocket(b, floorWS)
	}
	floorWSCall := func(g int) error {
		if err := floorSockets[g].Write(ctx, websocket.MessageText, payload); err != nil {
			return err
		}
		_, _, err := floorSockets[g].Read(ctx)
		return err
	}
	floorSDK := func(int) error { _, err := floorPool.call(); return err }

	conns := make([]*brRawConn, brConcurrency)
	for i := range conns {
		s, err := rc.NewStream(ctx, rs.ID(), brEchoProto)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Reset() })
		conns[i] = &brRawConn{s: s, br: bufio.NewReader(s)}
		// one call now: the lazy protocol negotiation must finish
		// before the owner's negotiation timeout, long before the
		// cases that use every stream run
		if err := conns[i].call(payload); err != nil {
			b.Fatal(err)
		}
	}

	// every case must work before anything is measured
	for _, check := range []func() error{
		func() error { return brGet(hc, direct) },
		func() error { return brGet(hc, viaHTTP) },
		func() error { return sockets[0].read(ctx) },
		func() error { return brInvokeRead(inv, id) },
	} {
		if err := check(); err != nil {
			b.Fatal(err)
		}
	}

	cases := []struct {
		name, label string
		op          func(g int) error
	}{
		{"direct-http", "", func(int) error { return brGet(hc, direct) }},
		{"http-binding", "HTTP binding via B (GET property) → A → HTTP backend", func(int) error { return brGet(hc, viaHTTP) }},
		{"ws-lmosprotocol", "WebSocket lmosprotocol via B → A → HTTP backend", func(g int) error { return sockets[g].read(ctx) }},
		{"libp2p-sdk", "libp2p SDK (B's Invoker) → A → HTTP backend", func(int) error { return brInvokeRead(inv, id) }},
		{"raw-libp2p-new-stream", "floor: raw libp2p echo, new stream per call (no HTTP)", func(int) error { return brRawCall(rc, rs.ID(), payload) }},
		{"raw-libp2p-same-stream", "floor: raw libp2p echo, one stream reused (no HTTP)", func(g int) error { return conns[g].call(payload) }},
		{"floor-http", "zero-work floor of the HTTP binding: HTTP → B → reused libp2p stream → A → HTTP backend", func(int) error { return brGet(hc, floorHTTP) }},
		{"floor-ws", "zero-work floor of the WebSocket path: WebSocket → B → reused libp2p stream → A → HTTP backend", floorWSCall},
		{"floor-sdk", "zero-work floor of the SDK path: Go call → reused libp2p stream → A → HTTP backend", floorSDK},
	}
	figs := make(map[string]*brFigures, len(cases))
	for _, cs := range cases {
		f := &brFigures{}
		figs[cs.name] = f
		b.Run(cs.name+"/c1", func(b *testing.B) { brSequential(b, func() error { return cs.op(0) }, f) })
		b.Run(cs.name+"/c64", func(b *testing.B) { brParallel(b, cs.op, f) })
	}

	base := figs["direct-http"]
	if base.p50 == 0 || base.opsPerS == 0 {
		return // filtered out by -bench
	}
	for _, cs := range cases[1:] {
		f := figs[cs.name]
		if f.p50 == 0 || f.opsPerS == 0 {
			continue
		}
		target := func(t string) string {
			if strings.HasPrefix(cs.name, "raw-") || strings.HasPrefix(cs.name, "floor-") {
				return ""
			}
			return t
		}
		const baseline = "direct HTTP to the backend"
		benchtab.Print(benchtab.Row{Row: "3", Case: cs.label, Metric: "p50 (c=1)", Unit: "µs", LMOS: us(f.p50), Base: us(base.p50), Baseline: baseline, Target: target("≤ 2.5×")})
		benchtab.Print(benchtab.Row{Row: "3", Case: cs.label, Metric: "p99 (c=1)", Unit: "µs", LMOS: us(f.p99), Base: us(base.p99), Baseline: baseline})
		benchtab.Print(benchtab.Row{Row: "3", Case: cs.label, Metric: "throughput (c=64)", Unit: "ops/s", LMOS: f.opsPerS, Base: base.opsPerS, Baseline: baseline, Target: target("≥ 0.4×")})
	}
}

// brStreamFigures are the results of streaming sessions: messages per
// second over all sessions and the p99 gap between consecutive messages.
type brStreamFigures struct {
	msgsPerS float64
	p99Gap   time.Duration
}

// brStreamLoop runs one session per b.Loop iteration; session calls got
// once per message received and returns the number received.
func brStreamLoop(b *testing.B, session func(got func()) (int, error), f *brStreamFigures) {
	gaps := make([]time.Duration, 0, 1<<16)
	var msgs int
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		last := t0
		first := true
		n, err := session(func() {
			now := time.Now()
			if !first {
				gaps = append(gaps, now.Sub(last))
			}
			first = false
			last = now
		})
		if err != nil {
			b.Fatal(err)
		}
		if n != brStreamChunks {
			b.Fatalf("session delivered %d chunks, want %d", n, brStreamChunks)
		}
		msgs += n
		total += time.Since(t0)
	}
	b.StopTimer()
	slices.Sort(gaps)
	f.msgsPerS = float64(msgs) / total.Seconds()
	f.p99Gap = gaps[len(gaps)*99/100]
	b.ReportMetric(f.msgsPerS, "msgs/s")
	b.ReportMetric(us(f.p99Gap), "p99-gap-µs")
}

// BenchmarkStreamCrossNode measures row 4: a streaming session of
// brStreamChunks output chunks from a Thing on node A to a consumer on
// node B (B's Invoker, libp2p), against a raw libp2p stream between two
// bare hosts carrying as many length-prefixed messages of the size of one
// encoded output chunk.
func BenchmarkStreamCrossNode(b *testing.B) {
	a, c := brPair(b)
	id := testnet.UniqueID(b)
	chunk := lmosproto.StringValue(strings.Repeat("x", brChunkSize))
	thing := interact.NewThing().OnStream("count", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		var n int
		select {
		case v := <-in:
			if err := v.Decode(&n); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		for range n {
			if err := out(chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := a.Register(brTD(b, id), thing); err != nil {
		b.Fatal(err)
	}
	brWaitKnown(b, c, id)
	inv := c.Invoker()
	count, err := lmosproto.ValueOf(brStreamChunks)
	if err != nil {
		b.Fatal(err)
	}
	lmosSession := func(got func()) (int, error) {
		req := lmosproto.NewMessage(id, lmosproto.MsgInvokeAction)
		req.Name, req.Input, req.Stream = "count", count, true
		s, err := inv.Invoke(context.Background(), req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = s.Close() }()
		n := 0
		for m := range s.Replies() {
			switch {
			case m.Type != lmosproto.MsgActionStatus:
				return n, fmt.Errorf("reply: %s %s", m.Type, m.Detail)
			case m.Status == lmosproto.ActionRunning && m.Output.Present():
				got()
				n++
			}
		}
		return n, nil
	}

	// The raw stream carries messages of the size of one encoded output
	// chunk as the owner sends it.
	sample := lmosproto.NewMessage(id, lmosproto.MsgInvokeAction).Reply(lmosproto.MsgActionStatus)
	sample.Name, sample.Status, sample.Output, sample.Stream = "count", lmosproto.ActionRunning, chunk, true
	encoded, err := lmosproto.JSON.Marshal(sample)
	if err != nil {
		b.Fatal(err)
	}
	rc, rs := brRawPair(b)
	rs.SetStreamHandler(brStreamProto, func(s network.Stream) {
		defer s.Close()
		var hdr [binary.MaxVarintLen64]byte
		if _, err := io.ReadFull(s, hdr[:4]); err != nil {
			_ = s.Reset()
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		bw := bufio.NewWriter(s)
		for range n {
			if err := lmosproto.WriteFrame(bw, encoded); err != nil {
				_ = s.Reset()
				return
			}
			// one write per message, as the owner node writes one frame
			// per reply
			if err := bw.Flush(); err != nil {
				_ = s.Reset()
				return
			}
		}
	})
	rawSession := func(got func()) (int, error) {
		s, err := rc.NewStream(context.Background(), rs.ID(), brStreamProto)
		if err != nil {
			return 0, err
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], brStreamChunks)
		if _, err := s.Write(hdr[:]); err != nil {
			_ = s.Reset()
			return 0, err
		}
		_ = s.CloseWrite()
		br := bufio.NewReader(s)
		n := 0
		for {
			if _, err := lmosproto.ReadFrame(br, lmosproto.MaxMessageSize); err != nil {
				if err == io.EOF {
					break
				}
				_ = s.Reset()
				return n, err
			}
			got()
			n++
		}
		return n, s.Close()
	}
	if n, err := lmosSession(func() {}); err != nil || n != brStreamChunks {
		b.Fatalf("streaming session: %d chunks, %v", n, err)
	}

	var lmos, raw brStreamFigures
	b.Run("raw-libp2p", func(b *testing.B) { brStreamLoop(b, rawSession, &raw) })
	b.Run("lmos-session", func(b *testing.B) { brStreamLoop(b, lmosSession, &lmos) })
	if lmos.msgsPerS == 0 || raw.msgsPerS == 0 {
		return
	}
	label := fmt.Sprintf("response stream across nodes, %d chunks of %d B", brStreamChunks, len(encoded))
	const baseline = "raw libp2p stream"
	benchtab.Print(benchtab.Row{Row: "4", Case: label, Metric: "messages/s", Unit: "msg/s", LMOS: lmos.msgsPerS, Base: raw.msgsPerS, Baseline: baseline})
	benchtab.Print(benchtab.Row{Row: "4", Case: label, Metric: "p99 inter-arrival", Unit: "µs", LMOS: us(lmos.p99Gap), Base: us(raw.p99Gap), Baseline: baseline})
}
