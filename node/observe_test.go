package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	protobuf "google.golang.org/protobuf/proto"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/config"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// obsTD is a Tool with one read-only number property.
func obsTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Observed " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"properties": map[string]any{
			"temperature": map[string]any{"type": "number", "readOnly": true,
				"forms": []any{map[string]any{"href": "https://obs.invalid/temperature"}}},
		},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatalf("TD: %v", err)
	}
	return td
}

// obsBackend is the Thing's HTTP service; it keeps the traceparent of
// each request.
type obsBackend struct {
	*httptest.Server
	mu           sync.Mutex
	traceparents []string
}

func newObsBackend(t *testing.T) *obsBackend {
	b := &obsBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/properties/temperature" {
			http.NotFound(w, r)
			return
		}
		b.mu.Lock()
		b.traceparents = append(b.traceparents, r.Header.Get("traceparent"))
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "21.5")
	}))
	t.Cleanup(b.Close)
	return b
}

// obsDo sends a request to n's API and returns the status and body.
func obsDo(t *testing.T, method, url, token, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// obsPublish publishes td on n with backend as its HTTP service.
func obsPublish(t *testing.T, n *node.Node, td *lmosproto.TD, backend string) {
	t.Helper()
	raw, err := json.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"td": json.RawMessage(raw), "backend": backend})
	if err != nil {
		t.Fatal(err)
	}
	if status, msg := obsDo(t, http.MethodPost, "http://"+n.APIAddr()+"/api/v1/things", n.APIToken(), string(body), nil); status/100 != 2 {
		t.Fatalf("publish: %d: %s", status, msg)
	}
}

// obsThing publishes a Thing on owner, served by a new backend, and waits
// until consumer knows it.
func obsThing(t *testing.T, owner, consumer *node.Node) (*obsBackend, string) {
	t.Helper()
	backend := newObsBackend(t)
	id := testnet.UniqueID(t)
	// A publication before the consumer is on the announce topic would
	// reach it only by a sync or the next republication.
	testnet.WaitFor(t, "both nodes on the announce topic", 20*time.Second, testnet.OnAnnounceTopic([]*node.Node{owner, consumer}, 1))
	obsPublish(t, owner, obsTD(t, id), backend.URL)
	testnet.WaitFor(t, "the consumer node learns the Thing", 20*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
	return backend, id
}

// scrape reads n's /metrics and parses it.
func scrape(t *testing.T, n *node.Node) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := fetchMetrics(n)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// fetchMetrics reads n's /metrics (without token) and parses it.
func fetchMetrics(n *node.Node) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + n.APIAddr() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// value returns the value of the sample of family name whose labels
// include want (summing counters and gauges over the other labels; for a
// histogram, its sample count), and whether there was one.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
	var sum float64
	found := false
metrics:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue metrics
			}
		}
		found = true
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

// TestMetricsAfterTraffic publishes a Thing on node A, reads its property
// through node B's HTTP binding, and checks, in both nodes' /metrics as
// Prometheus parses them, that the counters of that traffic moved.
func TestMetricsAfterTraffic(t *testing.T) {
	tn := testnet.New(t, 2, testnet.Options{})
	tn.Link(1, 0)
	a, b := tn.Nodes[0], tn.Nodes[1]
	backend, id := obsThing(t, a, b)
	url := "http://" + b.APIAddr() + "/things/" + id + "/properties/temperature"
	for range 3 {
		if status, body := obsDo(t, http.MethodGet, url, "", "", nil); status != http.StatusOK || strings.TrimSpace(body) != "21.5" {
			t.Fatalf("GET %s: %d %s", url, status, body)
		}
	}
	backend.mu.Lock()
	if len(backend.traceparents) != 3 {
		t.Errorf("backend served %d reads, want 3", len(backend.traceparents))
	}
	backend.mu.Unlock()
	// A property B's Thing does not have: a 404 the consumer side counts.
	if status, _ := obsDo(t, http.MethodGet, "http://"+b.APIAddr()+"/things/"+id+"/properties/nope", "", "", nil); status != http.StatusNotFound {
		t.Fatalf("unknown property: %d, want 404", status)
	}

	// B may have learned the Thing by the sync on connect, before A knew
	// of B's announce subscription; a Thing published now travels by
	// gossip (one more each half second until B counts one).
	last := time.Time{}
	testnet.WaitFor(t, "B delivers an announcement from gossip", 20*time.Second, func() (bool, string) {
		got, _ := value(scrape(t, b), "lmos_gossip_messages_total", map[string]string{"topic": "announce", "outcome": "delivered"})
		if got < 1 && time.Since(last) > 500*time.Millisecond {
			obsPublish(t, a, obsTD(t, testnet.UniqueID(t)), backend.URL)
			last = time.Now()
		}
		return got >= 1, fmt.Sprintf("%v delivered", got)
	})

	fa, fb := scrape(t, a), scrape(t, b)
	for _, c := range []struct {
		node     string
		families map[string]*dto.MetricFamily
		name     string
		labels   map[string]string
		min      float64
	}{
		{"B", fb, "lmos_interactions_total", map[string]string{"side": "consumer", "transport": "http", "operation": "readProperty", "status": "200"}, 3},
		{"B", fb, "lmos_interaction_duration_seconds", map[string]string{"side": "consumer", "transport": "http", "operation": "readProperty"}, 3},
		{"A", fa, "lmos_interactions_total", map[string]string{"side": "owner", "transport": "libp2p", "operation": "readProperty", "status": "200"}, 3},
		{"A", fa, "lmos_interaction_duration_seconds", map[string]string{"side": "owner", "transport": "libp2p", "operation": "readProperty"}, 3},
		{"B", fb, "lmos_api_requests_total", map[string]string{"method": "GET", "route": "/things/{id}/properties/{name}", "status": "200"}, 3},
		{"A", fa, "lmos_api_requests_total", map[string]string{"method": "POST", "route": "/api/v1/things", "status": "201"}, 1},
		{"A", fa, "lmos_directory_things", map[string]string{"origin": "own", "scope": "public"}, 1},
		{"B", fb, "lmos_directory_things", map[string]string{"origin": "learned", "scope": "public"}, 1},
		{"B", fb, "lmos_directory_things_online", nil, 1},
		{"B", fb, "lmos_gossip_messages_total", map[string]string{"topic": "announce", "outcome": "delivered"}, 1},
		{"A", fa, "lmos_peers", map[string]string{"transport": "tcp", "path": "direct"}, 1},
		{"B", fb, "lmos_peers", map[string]string{"transport": "tcp", "path": "direct"}, 1},
		// go-libp2p's own metrics, in the node's registry.
		{"A", fa, "libp2p_rcmgr_streams", nil, 1},
	} {
		got, ok := value(c.families, c.name, c.labels)
		if !ok || got < c.min {
			t.Errorf("%s: %s%v = %v (present %v), want at least %v", c.node, c.name, c.labels, got, ok, c.min)
		}
	}
	if got, _ := value(fb, "lmos_interactions_total", map[string]string{"side": "consumer", "status": "404"}); got != 0 {
		// The gateway answers an unknown affordance itself, before any
		// interaction; none may be counted as a 404 interaction.
		t.Errorf("B: lmos_interactions_total{status=404} = %v, want 0", got)
	}
	if got, _ := value(fb, "lmos_api_requests_total", map[string]string{"route": "/things/{id}/properties/{name}", "status": "404"}); got != 1 {
		t.Errorf("B: API 404s on the property route = %v, want 1", got)
	}
	// A group founded on A: one more group, one change of its log.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Groups().Create(ctx, "observed", nil); err != nil {
		t.Fatal(err)
	}
	// The DHT queue puts A's record in the background; the routing tables
	// fill after identify; the group's change is reported asynchronously.
	testnet.WaitFor(t, "A's DHT put, routing table and group in /metrics", 20*time.Second, func() (bool, string) {
		f := scrape(t, a)
		puts, _ := value(f, "lmos_dht_queries_total", map[string]string{"op": "put"})
		rt, _ := value(f, "lmos_dht_routing_table_peers", nil)
		queued, hasQueue := value(f, "lmos_dht_queue_records", nil)
		groups, _ := value(f, "lmos_groups", nil)
		changes, _ := value(f, "lmos_group_changes_total", map[string]string{"membership": "member"})
		return puts >= 1 && rt >= 1 && hasQueue && queued <= 1 && groups == 1 && changes >= 1,
			fmt.Sprintf("puts %v, routing table %v, DHT queue %v (reported: %t), groups %v, changes %v", puts, rt, queued, hasQueue, groups, changes)
	})
}

// TestTraceAcrossNodes checks that one call through node B's HTTP binding
// to node A's Thing is one trace: B's API span, B's consumer span, A's
// owner span and the backend request all carry the caller's trace id.
func TestTraceAcrossNodes(t *testing.T) {
	exporters := []*tracetest.InMemoryExporter{tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()}
	var providers []*sdktrace.TracerProvider
	for _, e := range exporters {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(e))
		providers = append(providers, tp)
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	}
	tn := testnet.New(t, 2, testnet.Options{NodeOptions: func(i int) []node.Option {
		return []node.Option{node.WithTracerProvider(providers[i])}
	}})
	tn.Link(1, 0)
	a, b := tn.Nodes[0], tn.Nodes[1]
	backend, id := obsThing(t, a, b)

	// The caller's trace.
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	header := http.Header{"Traceparent": {"00-" + callerTrace + "-00f067aa0ba902b7-01"}}
	url := "http://" + b.APIAddr() + "/things/" + id + "/properties/temperature"
	if status, body := obsDo(t, http.MethodGet, url, "", "", header); status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}

	backend.mu.Lock()
	tps := append([]string(nil), backend.traceparents...)
	backend.mu.Unlock()
	if len(tps) != 1 {
		t.Fatalf("backend got %d requests, want 1", len(tps))
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tps[0]}))
	if got := sc.TraceID().String(); got != callerTrace {
		t.Errorf("backend request's traceparent %q: trace %s, want %s", tps[0], got, callerTrace)
	}

	// Spans end when the reply has gone out; B's API span last.
	want := []struct {
		node int
		name string
		kind trace.SpanKind
	}{
		{1, "GET /things/{id}/properties/{name}", trace.SpanKindServer},
		{1, "lmos readProperty", trace.SpanKindClient},
		{0, "lmos readProperty", trace.SpanKindServer},
	}
	var spanIDs []trace.SpanID
	for _, w := range want {
		var found bool
		testnet.WaitFor(t, "span "+w.name, 10*time.Second, func() (bool, string) {
			for _, s := range exporters[w.node].GetSpans() {
				if s.Name == w.name && s.SpanKind == w.kind {
					if got := s.SpanContext.TraceID().String(); got != callerTrace {
						t.Fatalf("node %d span %q: trace %s, want %s", w.node, w.name, got, callerTrace)
					}
					spanIDs = append(spanIDs, s.SpanContext.SpanID())
					found = true
					return true, ""
				}
			}
			return false, "not exported yet"
		})
		if !found {
			return
		}
	}
	// The backend request's parent is A's owner span.
	if sc.SpanID() != spanIDs[2] {
		t.Errorf("backend request's parent span %s, want A's owner span %s", sc.SpanID(), spanIDs[2])
	}
}

// TestProbes checks that /healthz and /readyz answer without the token
// while /metrics needs it, and that readiness waits for a bootstrap peer
// and ends with Close.
func TestProbes(t *testing.T) {
	// The bootstrap peer: started once to learn its address, then down.
	peerCfg := testnet.Config(t)
	p, err := node.New(peerCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	addr := p.Addrs()[0]
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	const token = "0123456789abcdef0123456789abcdef-probes"
	cfg := testnet.Config(t)
	cfg.APIToken = token
	cfg.Bootstrap = []string{addr.String()}
	n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if rd := n.Ready(); rd.Ready || rd.Checks["node"] != "not started" {
		t.Errorf("before Start: %+v, want not ready, node not started", rd)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.APIAddr()
	if status, body := obsDo(t, http.MethodGet, base+"/healthz", "", "", nil); status != http.StatusOK {
		t.Errorf("/healthz without token: %d %s", status, body)
	}
	status, body := obsDo(t, http.MethodGet, base+"/readyz", "", "", nil)
	var rd api.Readiness
	if err := json.Unmarshal([]byte(body), &rd); err != nil {
		t.Fatalf("/readyz: %d %q: %v", status, body, err)
	}
	if status != http.StatusServiceUnavailable || rd.Ready || rd.Checks["bootstrap"] == "ok" || rd.Checks["api"] != "ok" || rd.Checks["host"] != "ok" || rd.Checks["datastore"] != "ok" {
		t.Errorf("/readyz with the bootstrap peer down: %d %s, want 503 naming only bootstrap", status, body)
	}
	if status, _ := obsDo(t, http.MethodGet, base+"/metrics", "", "", nil); status != http.StatusUnauthorized {
		t.Errorf("/metrics without token: %d, want 401", status)
	}
	if status, _ := obsDo(t, http.MethodGet, base+"/metrics", token, "", nil); status != http.StatusOK {
		t.Errorf("/metrics with token: %d, want 200", status)
	}
	if status, _ := obsDo(t, http.MethodGet, base+"/debug/pprof/", token, "", nil); status != http.StatusNotFound {
		t.Errorf("pprof without Config.Pprof: %d, want 404", status)
	}

	// The bootstrap peer comes back on the same address.
	peerCfg.Listen = []string{addrWithoutPeer(t, addr.String())}
	p2, err := node.New(peerCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p2.Close() })
	if err := p2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "/readyz 200 once the bootstrap peer is up", 60*time.Second, func() (bool, string) {
		status, body := obsDo(t, http.MethodGet, base+"/readyz", "", "", nil)
		return status == http.StatusOK, body
	})

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if rd := n.Ready(); rd.Ready || rd.Checks["node"] != "closed" || rd.Checks["api"] == "ok" {
		t.Errorf("after Close: %+v, want not ready", rd)
	}
}

// addrWithoutPeer strips /p2p/<id> from a multiaddr string.
func addrWithoutPeer(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "/p2p/")
	if i < 0 {
		t.Fatalf("%s has no /p2p/", s)
	}
	return s[:i]
}

// TestPprofBehindToken checks that Config.Pprof serves the profiler
// under the API's token, also where reads need none (requireTokenFor
// "admin", the default on loopback).
func TestPprofBehindToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-pprof"
	for _, configured := range []bool{true, false} {
		n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
			if configured {
				cfg.APIToken = token
			}
			cfg.Pprof = true
		}}).Nodes[0]
		url := "http://" + n.APIAddr() + "/debug/pprof/goroutine?debug=1"
		if status, _ := obsDo(t, http.MethodGet, url, "", "", nil); status != http.StatusUnauthorized {
			t.Errorf("apiToken configured %v: pprof without token: %d, want 401", configured, status)
		}
		if status, body := obsDo(t, http.MethodGet, url, n.APIToken(), "", nil); status != http.StatusOK || !strings.Contains(body, "goroutine profile") {
			t.Errorf("apiToken configured %v: pprof with token: %d %.80s", configured, status, body)
		}
	}
}

// TestQuotaRefusalsCounted holds the one connection a client may open and
// checks that the connection refused beyond it is counted.
func TestQuotaRefusalsCounted(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.APILimits.MaxConnsPerClient = 1
		cfg.APILimits.LimitLoopback = true
	}}).Nodes[0]
	held, err := net.Dial("tcp", n.APIAddr())
	if err != nil {
		t.Fatal(err)
	}
	over, err := net.Dial("tcp", n.APIAddr())
	if err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := over.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection over the cap: read %v, want EOF", err)
	}
	over.Close()
	held.Close()
	testnet.WaitFor(t, "the refusal in /metrics", 10*time.Second, func() (bool, string) {
		f, err := fetchMetrics(n)
		if err != nil {
			return false, err.Error() // the held connection may not be released yet
		}
		got, _ := value(f, "lmos_quota_refusals_total", map[string]string{"quota": "api_connections"})
		return got >= 1, fmt.Sprintf("api_connections refusals %v", got)
	})
}

// TestOTLPFromEnvironment sets OTEL_EXPORTER_OTLP_ENDPOINT to a collector
// served here and checks that the node, given no tracer provider, exports
// the spans of an API request over OTLP/HTTP, flushed at Close.
func TestOTLPFromEnvironment(t *testing.T) {
	var mu sync.Mutex
	var spans []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || protobuf.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			var service string
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans = append(spans, service+": "+s.GetName())
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "lmos-test")

	cfg := testnet.Config(t)
	n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if status, body := obsDo(t, http.MethodGet, "http://"+n.APIAddr()+"/api/v1/node", "", "", nil); status != http.StatusOK {
		t.Fatalf("GET /api/v1/node: %d %s", status, body)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(spans, "lmos-test: GET /api/v1/node") {
		t.Errorf("collector got spans %q, want the API request's", spans)
	}
}
