package main

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/p2p"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// echoProto is the raw hosts' request-reply protocol: the caller writes a
// message and closes its side, the host writes it back.
const echoProto = protocol.ID("/lmos-wanlab/echo/1.0.0")

// wanPeer is one namespace's `wanlab peer`.
type wanPeer struct {
	k        int
	home     string // the namespace's node home (its API token)
	lmosnode string // the lmosnode binary (cold nodes)
	coldNS   bool   // the cold namespace: no node or raw host of its own
	log      *slog.Logger
	api      *http.Client

	ctx      context.Context // the peer's life
	mu       sync.Mutex
	raw      *rawHost // nil while none runs (scale lab, raw hosts apart)
	arrivals map[string]time.Time
	waiters  map[string][]chan time.Time
	sse      bool
	cold     *exec.Cmd
	coldHome string
}

func runPeer(args []string) error {
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	k := fs.Int("index", 0, "this namespace's index K (address 10.78.K.2)")
	home := fs.String("home", "", "home of this namespace's lmosnode (for its API token); for -cold, where cold nodes' homes go")
	cold := fs.Bool("cold", false, "the cold-discovery namespace: no raw host of its own; starts fresh nodes on request")
	raw := fs.Bool("raw", true, "start the raw host now; else when the driver asks (POST /raw/start: raw hosts measured apart from the nodes)")
	bin := fs.String("lmosnode", "lmosnode", "the lmosnode binary (-cold)")
	transportFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *k < 1 || *k > 250 || *home == "" {
		return errors.New("peer: -index 1..250 and -home are required")
	}
	p := &wanPeer{k: *k, home: *home, lmosnode: *bin, coldNS: *cold,
		log:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
		api:      &http.Client{Timeout: 2 * time.Minute},
		arrivals: make(map[string]time.Time), waiters: make(map[string][]chan time.Time)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p.ctx = ctx
	if !*cold {
		if *raw {
			if err := p.startRaw(); err != nil {
				return err
			}
		}
		defer p.stopRaw()
		go p.watchNode(ctx)
		backend := &http.Server{Addr: net.JoinHostPort(ipOf(p.k), strconv.Itoa(backendPort)), Handler: http.HandlerFunc(echoBackend)}
		go func() { _ = backend.ListenAndServe() }()
		defer func() { _ = backend.Close() }()
	}
	defer p.stopCold()
	srv := &http.Server{Addr: net.JoinHostPort(ipOf(p.k), strconv.Itoa(ctlPort)), Handler: p.routes()}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("WANLAB peer %d ready\n", p.k)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// rawHost is a peer's raw baseline host.
type rawHost struct {
	h      host.Host
	dht    *kaddht.IpfsDHT
	topic  *pubsub.Topic
	cancel context.CancelFunc
}

func (r *rawHost) close() {
	r.cancel()
	_ = r.dht.Close()
	_ = r.h.Close()
}

// rawHost returns the running raw host, nil if none.
func (p *wanPeer) rawHost() *rawHost {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw
}

// withRaw serves a raw measurement with the running raw host, or answers
// that none runs.
func (p *wanPeer) withRaw(h func(http.ResponseWriter, *http.Request, *rawHost)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw := p.rawHost()
		if raw == nil {
			fail(w, errors.New("no raw host runs here (POST /raw/start)"))
			return
		}
		h(w, r, raw)
	}
}

// stopRaw closes the raw host, if one runs.
func (p *wanPeer) stopRaw() {
	p.mu.Lock()
	r := p.raw
	p.raw = nil
	p.mu.Unlock()
	if r != nil {
		r.close()
	}
}

// startRaw starts the raw baseline host, if none runs: built like the
// loopback benchmark's raw hosts (node/bench_net_test.go), on the lab's
// transport only, as the lab's nodes listen.
func (p *wanPeer) startRaw() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.raw != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(p.ctx)
	r, err := newRawHost(ctx, p.k, p.arrive)
	if err != nil {
		cancel()
		return err
	}
	r.cancel = cancel
	p.raw = r
	return nil
}

// newRawHost starts raw host k; arrive is told of every message on its
// topic.
func newRawHost(ctx context.Context, k int, arrive func(string, time.Time)) (r *rawHost, err error) {
	h, err := libp2p.New(libp2p.Identity(rawKey(k)),
		libp2p.ListenAddrStrings(hostAddr(ipOf(k), rawPort)),
		rawTransport(),
		libp2p.DisableRelay(), libp2p.DisableMetrics(),
		// The lab's addresses are private, which go-libp2p dials with
		// 5 s for the whole handshake: too short for a hundred peers
		// starting at once on two cores.
		libp2p.SwarmOpts(swarm.WithDialTimeoutLocal(labDialTimeout)), libp2p.WithDialTimeout(labDialTimeout))
	if err != nil {
		return nil, err
	}
	r = &rawHost{h: h}
	defer func() {
		if err != nil {
			if r.dht != nil {
				_ = r.dht.Close()
			}
			_ = h.Close()
		}
	}()
	h.SetStreamHandler(echoProto, func(s network.Stream) {
		defer func() { _ = s.Close() }()
		_, _ = io.Copy(s, s)
	})
	if r.dht, err = kaddht.New(ctx, h, kaddht.ProtocolPrefix(lmosproto.ProtocolPrefix), kaddht.Mode(kaddht.ModeServer)); err != nil {
		return nil, err
	}
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageIdFn(p2p.MessageID),
		pubsub.WithFloodPublish(true),
		pubsub.WithMaxMessageSize(lmosproto.MaxRecordSize+64<<10))
	if err != nil {
		return nil, err
	}
	if r.topic, err = ps.Join(rawTopic); err != nil {
		return nil, err
	}
	sub, err := r.topic.Subscribe()
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if len(m.GetData()) >= 16 {
				arrive("raw:"+hex.EncodeToString(m.GetData()[:16]), time.Now())
			}
		}
	}()
	return r, nil
}

// arrive records the first arrival of key and wakes its waiters.
func (p *wanPeer) arrive(key string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.arrivals[key]; ok {
		return
	}
	p.arrivals[key] = at
	for _, w := range p.waiters[key] {
		w <- at
	}
	delete(p.waiters, key)
}

// watchNode follows the local node's thing_created events, reconnecting
// when the stream ends.
func (p *wanPeer) watchNode(ctx context.Context) {
	for ctx.Err() == nil {
		if err := p.followEvents(ctx); err != nil && ctx.Err() == nil {
			p.log.Debug("event stream", "err", err)
		}
		p.mu.Lock()
		p.sse = false
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *wanPeer) followEvents(ctx context.Context) error {
	req, err := p.nodeRequest(ctx, http.MethodGet, "/events/thing_created", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{}).Do(req) // no timeout: a stream
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /events/thing_created: %s", resp.Status)
	}
	p.mu.Lock()
	p.sse = true
	p.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		at := time.Now()
		var ev struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.ID != "" && !strings.HasPrefix(ev.ID, scalePrefix) {
			p.arrive("lmos:"+ev.ID, at)
		}
	}
	return sc.Err()
}

// nodeRequest is a request to the local node's API, with its token.
// labDialTimeout bounds a raw host's dial, handshakes included.
const labDialTimeout = 30 * time.Second

func (p *wanPeer) nodeRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	return apiRequest(ctx, p.home, method, path, body)
}

func apiRequest(ctx context.Context, home, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, nodeAPI+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok, err := os.ReadFile(filepath.Join(home, "api-token")); err == nil {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	return req, nil
}

// callNode does one API request and decodes a JSON answer into out (if
// not nil); any status but 2xx is an error.
func (p *wanPeer) callNode(ctx context.Context, home, method, path string, body, out any) error {
	req, err := apiRequest(ctx, home, method, path, body)
	if err != nil {
		return err
	}
	return doJSON(p.api, req, out)
}

// doJSON does req and decodes a JSON answer into out (if not nil); any
// status but 2xx is an error.
func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.2000s", req.Method, req.URL.Path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func echoBackend(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/actions/echo" {
		http.NotFound(w, r)
		return
	}
	var in json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil && err != io.EOF {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"echo": in})
}

// thingTD is the TD a lab node publishes: an Agent with capability cap
// and, if echo, an echo action served by this namespace's backend.
func thingTD(id, title, capability string, echo bool) map[string]any {
	td := map[string]any{
		"@context":            []any{"https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", map[string]string{"lmos": "https://eclipse.dev/lmos/protocol/v1"}},
		"@type":               "lmos:Agent",
		"id":                  id,
		"title":               title,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:metadata":       map[string]any{"lmos:vendor": map[string]string{"lmos:name": "WAN lab"}},
		"lmos:capabilities":   []any{map[string]string{"lmos:id": capability, "lmos:version": "1.0.0"}},
	}
	if echo {
		td["actions"] = map[string]any{"echo": map[string]any{
			"input": map[string]string{"type": "object"}, "output": map[string]string{"type": "object"},
			"forms": []any{map[string]string{"href": "/actions/echo"}},
		}}
	}
	return td
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), http.StatusBadGateway)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// routes is the control API the driver calls (drive.go): the raw host's
// and the node's side of each measurement.
func (p *wanPeer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", p.status)
	mux.HandleFunc("GET /wait", p.wait)
	mux.HandleFunc("POST /raw/start", func(w http.ResponseWriter, r *http.Request) {
		if err := p.startRaw(); err != nil {
			fail(w, err)
			return
		}
		writeOK(w)
	})
	mux.HandleFunc("POST /raw/stop", func(w http.ResponseWriter, r *http.Request) {
		p.stopRaw()
		writeOK(w)
	})
	mux.HandleFunc("POST /raw/connect", p.withRaw(p.rawConnect))
	mux.HandleFunc("POST /raw/publish", p.withRaw(p.rawPublish))
	mux.HandleFunc("POST /raw/provide", p.withRaw(p.rawProvide))
	mux.HandleFunc("POST /raw/coldfind", p.rawColdFind)
	mux.HandleFunc("POST /lmos/connect", p.lmosConnect)
	mux.HandleFunc("POST /lmos/publish", p.lmosPublish)
	mux.HandleFunc("POST /lmos/bulk", p.bulk)
	mux.HandleFunc("GET /lmos/stats", p.stats)
	mux.HandleFunc("POST /lmos/use", p.use)
	mux.HandleFunc("POST /lmos/kill", p.kill)
	mux.HandleFunc("POST /lmos/heap", p.heap)
	mux.HandleFunc("POST /lmos/cpu", p.cpu)
	mux.HandleFunc("POST /rtt", p.withRaw(p.rtt))
	mux.HandleFunc("POST /cold/start", p.coldStart)
	mux.HandleFunc("POST /cold/find", p.coldFind)
	mux.HandleFunc("POST /cold/stop", func(w http.ResponseWriter, r *http.Request) {
		p.stopCold()
		writeOK(w)
	})
	return mux
}

// writeOK answers {"ok": true}.
func writeOK(w http.ResponseWriter) { writeJSON(w, map[string]bool{"ok": true}) }

// status serves GET /status: the raw host's peers and topic peers, the
// node's ID and peers, whether the node's event stream is followed.
func (p *wanPeer) status(w http.ResponseWriter, r *http.Request) {
	st := map[string]any{}
	var info struct {
		PeerID string `json:"peerID"`
	}
	if raw := p.rawHost(); raw != nil {
		st["raw"] = true
		st["rawPeers"] = len(raw.h.Network().Peers())
		st["topicPeers"] = len(raw.topic.ListPeers())
	}
	if !p.coldNS {
		if p.callNode(r.Context(), p.home, http.MethodGet, "/api/v1/node", nil, &info) == nil {
			st["nodeID"] = info.PeerID
		}
		var peers []json.RawMessage
		if p.callNode(r.Context(), p.home, http.MethodGet, "/api/v1/peers", nil, &peers) == nil {
			st["nodePeers"] = len(peers)
		}
	}
	p.mu.Lock()
	st["sse"] = p.sse
	p.mu.Unlock()
	writeJSON(w, st)
}

// wait serves GET /wait?key=…&timeout=…: when the message or Thing key
// arrived here (at most timeout, default a minute, from now).
func (p *wanPeer) wait(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	timeout, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil {
		timeout = time.Minute
	}
	p.mu.Lock()
	at, ok := p.arrivals[key]
	var ch chan time.Time
	if !ok {
		ch = make(chan time.Time, 1)
		p.waiters[key] = append(p.waiters[key], ch)
	}
	p.mu.Unlock()
	if !ok {
		select {
		case at = <-ch:
		case <-time.After(timeout):
			http.Error(w, "not arrived", http.StatusGatewayTimeout)
			return
		case <-r.Context().Done():
			return
		}
	}
	writeJSON(w, map[string]int64{"at": at.UnixNano()})
}

// rawConnect serves POST /raw/connect?to=K: the raw host connects to
// namespace K's.
func (p *wanPeer) rawConnect(w http.ResponseWriter, r *http.Request, raw *rawHost) {
	to, _ := strconv.Atoi(r.URL.Query().Get("to"))
	ai, err := peer.AddrInfoFromString(rawAddr(to))
	if err == nil {
		err = raw.h.Connect(r.Context(), *ai)
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeOK(w)
}

// rawPublish serves POST /raw/publish?size=N: the raw host publishes N
// random bytes on its topic; the answer has the message's key and the
// time it was sent.
func (p *wanPeer) rawPublish(w http.ResponseWriter, r *http.Request, raw *rawHost) {
	size, _ := strconv.Atoi(r.URL.Query().Get("size"))
	msg := make([]byte, max(size, 16))
	_, _ = crand.Read(msg)
	start := time.Now()
	if err := raw.topic.Publish(r.Context(), msg); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"key": "raw:" + hex.EncodeToString(msg[:16]), "start": start.UnixNano()})
}

// rawProvide serves POST /raw/provide?capability=…: the raw host provides
// the capability's key in the DHT.
func (p *wanPeer) rawProvide(w http.ResponseWriter, r *http.Request, raw *rawHost) {
	if err := raw.dht.Provide(r.Context(), lmosdht.CapabilityCID(r.URL.Query().Get("capability")), true); err != nil {
		fail(w, err)
		return
	}
	writeOK(w)
}

// lmosConnect serves POST /lmos/connect?addr=…: the node connects to the
// peer at addr.
func (p *wanPeer) lmosConnect(w http.ResponseWriter, r *http.Request) {
	if err := p.callNode(r.Context(), p.home, http.MethodPost, "/api/v1/connect", map[string]string{"addr": r.URL.Query().Get("addr")}, nil); err != nil {
		fail(w, err)
		return
	}
	writeOK(w)
}

// lmosPublish serves POST /lmos/publish?id=…&capability=…[&echo=1][&size=1]:
// the node publishes a Thing (with an echo action served by this
// namespace's backend); the answer has the time it was sent and, with
// size, the size of the signed TD.
func (p *wanPeer) lmosPublish(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	body := map[string]any{"td": thingTD(q.Get("id"), "WAN lab "+strconv.Itoa(p.k), q.Get("capability"), q.Get("echo") == "1")}
	if q.Get("echo") == "1" {
		body["backend"] = fmt.Sprintf("http://%s:%d", ipOf(p.k), backendPort)
	}
	start := time.Now()
	if err := p.callNode(r.Context(), p.home, http.MethodPost, "/api/v1/things", body, nil); err != nil {
		fail(w, err)
		return
	}
	out := map[string]any{"start": start.UnixNano()}
	if q.Get("size") == "1" {
		// The signed TD as it travels (a record carries it and a few
		// bytes of envelope): the raw messages' size.
		req, _ := p.nodeRequest(r.Context(), http.MethodGet, "/things/"+q.Get("id"), nil)
		if resp, err := p.api.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out["size"] = len(b)
		}
	}
	writeJSON(w, out)
}

// rtt measures request-reply from this namespace to namespace ?to: n
// calls each, interleaved, after one untimed call of each (connections
// made, the Thing resolved):
//
//	lmos  POST /things/{thing}/actions/echo on the local node's HTTP
//	      binding: this node calls the owner over libp2p, which calls its
//	      backend
//	http  POST to the owner's backend directly, one kept-alive connection
//	raw   raw libp2p echo, a new stream per call on one connection
func (p *wanPeer) rtt(w http.ResponseWriter, r *http.Request, raw *rawHost) {
	q := r.URL.Query()
	to, _ := strconv.Atoi(q.Get("to"))
	n, _ := strconv.Atoi(q.Get("n"))
	thing := q.Get("thing")
	ctx := r.Context()
	ai, err := peer.AddrInfoFromString(rawAddr(to))
	if err != nil {
		fail(w, err)
		return
	}
	if err := raw.h.Connect(ctx, *ai); err != nil {
		fail(w, err)
		return
	}
	direct := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer direct.CloseIdleConnections()
	backendURL := fmt.Sprintf("http://%s:%d/actions/echo", ipOf(to), backendPort)
	payload := map[string]string{"q": "wan lab " + strconv.Itoa(p.k)}
	calls := map[string]func() error{
		"raw": func() error {
			s, err := raw.h.NewStream(ctx, ai.ID, echoProto)
			if err != nil {
				return err
			}
			defer func() { _ = s.Close() }()
			msg := make([]byte, 64)
			if _, err := s.Write(msg); err != nil {
				return err
			}
			if err := s.CloseWrite(); err != nil {
				return err
			}
			_, err = io.ReadFull(s, msg)
			return err
		},
		"http": func() error {
			b, _ := json.Marshal(payload)
			resp, err := direct.Post(backendURL, "application/json", bytes.NewReader(b))
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("backend: %s", resp.Status)
			}
			return nil
		},
		"lmos": func() error {
			var out struct {
				Echo map[string]string `json:"echo"`
			}
			if err := p.callNode(ctx, p.home, http.MethodPost, "/things/"+thing+"/actions/echo", payload, &out); err != nil {
				return err
			}
			if out.Echo["q"] != payload["q"] {
				return fmt.Errorf("echo answered %v", out)
			}
			return nil
		},
	}
	order := []string{"raw", "http", "lmos"}
	res := map[string][]float64{}
	for i := -1; i < n; i++ {
		for _, kind := range order {
			start := time.Now()
			if err := calls[kind](); err != nil {
				fail(w, fmt.Errorf("%s call %d to %d: %w", kind, i, to, err))
				return
			}
			if i >= 0 {
				res[kind] = append(res[kind], ms(time.Since(start)))
			}
		}
	}
	writeJSON(w, res)
}

// rawColdFind: a fresh raw kad-dht client host joins through raw host
// ?entry and looks up the providers of ?capability, as FindCapability
// does (federation.MaxProviders); found is when ?want distinct providers
// were seen (-1: never), ended when the lookup ended.
func (p *wanPeer) rawColdFind(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	entry, _ := strconv.Atoi(q.Get("entry"))
	want, _ := strconv.Atoi(q.Get("want"))
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	h, err := libp2p.New(libp2p.ListenAddrStrings(hostAddr(ipOf(p.k), 0)),
		rawTransport(), libp2p.DisableRelay(), libp2p.DisableMetrics(),
		libp2p.SwarmOpts(swarm.WithDialTimeoutLocal(labDialTimeout)), libp2p.WithDialTimeout(labDialTimeout))
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = h.Close() }()
	d, err := kaddht.New(ctx, h, kaddht.ProtocolPrefix(lmosproto.ProtocolPrefix), kaddht.Mode(kaddht.ModeClient))
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = d.Close() }()
	ai, _ := peer.AddrInfoFromString(rawAddr(entry))
	if err := h.Connect(ctx, *ai); err != nil {
		fail(w, err)
		return
	}
	for d.RoutingTable().Size() == 0 {
		if ctx.Err() != nil {
			fail(w, errors.New("empty routing table"))
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	found := -1.0
	seen := map[peer.ID]bool{}
	for pi := range d.FindProvidersAsync(ctx, lmosdht.CapabilityCID(q.Get("capability")), federation.MaxProviders) {
		seen[pi.ID] = true
		if len(seen) == want {
			found = ms(time.Since(start))
		}
	}
	writeJSON(w, map[string]any{"found": found, "ended": ms(time.Since(start)), "providers": len(seen)})
}

// coldStart starts a fresh lmosnode in this namespace that learns nothing
// by itself (gossip and sync on connect off, a DHT client), as the
// loopback benchmark's cold node, with ?bootstrap as its only peer, and
// answers once it is connected.
func (p *wanPeer) coldStart(w http.ResponseWriter, r *http.Request) {
	p.stopCold()
	home, err := os.MkdirTemp(p.home, "cold")
	if err != nil {
		fail(w, err)
		return
	}
	if out, err := exec.Command(p.lmosnode, "init", "--home", home).CombinedOutput(); err != nil {
		fail(w, fmt.Errorf("init: %v: %s", err, out))
		return
	}
	cfgPath := filepath.Join(home, "config.json")
	var cfg map[string]any
	b, err := os.ReadFile(cfgPath)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		fail(w, err)
		return
	}
	for k, v := range map[string]any{"mdns": false, "dhtMode": "client", "gossip": false, "syncOnConnect": false,
		"autoNAT": false, "holePunching": false, "relayClient": false,
		"listen": []string{hostAddr(ipOf(p.k), nodePort)}, "api": strings.TrimPrefix(nodeAPI, "http://"),
		"bootstrap": []string{r.URL.Query().Get("bootstrap")}} {
		cfg[k] = v
	}
	if cm, ok := cfg["connMgr"].(map[string]any); ok {
		cm["dialTimeout"] = labDialTimeout.String() // as the raw hosts'
	}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		fail(w, err)
		return
	}
	logf, err := os.Create(filepath.Join(home, "node.log"))
	if err != nil {
		fail(w, err)
		return
	}
	defer func() { _ = logf.Close() }()
	// At debug: what each lookup asked and learned, kept after the node
	// stops (stopCold).
	cmd := exec.Command(p.lmosnode, "--log-level", "debug", "up", "--home", home)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		fail(w, err)
		return
	}
	p.mu.Lock()
	p.cold, p.coldHome = cmd, home
	p.mu.Unlock()
	// Ready as the loopback benchmark's cold node: a peer in its DHT
	// routing table (which under latency comes an identify round trip
	// after the connection).
	deadline := time.Now().Add(time.Minute)
	for p.routingTable(r.Context(), home) == 0 {
		if time.Now().After(deadline) {
			fail(w, errors.New("cold node: an empty DHT routing table after a minute"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	writeOK(w)
}

// routingTable reads the size of the DHT routing table of the node at
// home from its metrics (lmos_dht_routing_table_peers); 0 if unknown.
func (p *wanPeer) routingTable(ctx context.Context, home string) int {
	req, err := apiRequest(ctx, home, http.MethodGet, "/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := p.api.Do(req)
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "lmos_dht_routing_table_peers "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f)
		}
	}
	return 0
}

// coldFind times GET /things?capability= on the cold node: a miss, so the
// node looks the capability up in the DHT and fetches the providers' TDs.
func (p *wanPeer) coldFind(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	home := p.coldHome
	p.mu.Unlock()
	var things []json.RawMessage
	start := time.Now()
	err := p.callNode(r.Context(), home, http.MethodGet, "/things?capability="+r.URL.Query().Get("capability"), nil, &things)
	d := time.Since(start)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"ms": ms(d), "count": len(things), "lookup": lastLookup(filepath.Join(home, "node.log"))})
}

// lastLookup is the last summary of a provider lookup (federation's debug
// line "provider lookup done": when the first and last providers came,
// why and when the DHT lookup stopped) in the node log at path, or "".
func lastLookup(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var last string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "provider lookup done") {
			last = strings.TrimSpace(line)
		}
	}
	return last
}

func (p *wanPeer) stopCold() {
	p.mu.Lock()
	cmd, home := p.cold, p.coldHome
	p.cold, p.coldHome = nil, ""
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	_ = os.Rename(filepath.Join(home, "node.log"), home+".log")
	_ = os.RemoveAll(home)
}
