package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// deviceTD is a Thing with a property, a quick action, a long-running
// action and an event.
func deviceTD(t *testing.T, id string) *lmosproto.TD {
	t.Helper()
	return deviceTDIn(t, id, json.RawMessage(lmosproto.LMOSContext()), []string{lmosproto.TypeTool})
}

// deviceTDIn is deviceTD with the @context ctx and the @type types (none
// if nil).
func deviceTDIn(t *testing.T, id string, ctx any, types []string) *lmosproto.TD {
	t.Helper()
	doc := map[string]any{
		"@context":            ctx,
		"id":                  id,
		"title":               "Thermostat " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"properties": map[string]any{
			"target": map[string]any{"type": "number", "observable": true,
				"forms": []any{map[string]any{"href": "https://backend.example/target"}}},
			"model": map[string]any{"type": "string", "readOnly": true,
				"forms": []any{map[string]any{"href": "https://backend.example/model"}}},
		},
		"actions": map[string]any{
			"add": map[string]any{
				"input": map[string]any{"type": "object", "required": []string{"a", "b"},
					"properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}},
				"output": map[string]any{"type": "number"},
				"forms":  []any{map[string]any{"href": "https://backend.example/add"}},
			},
			"calibrate": map[string]any{"forms": []any{map[string]any{"href": "https://backend.example/calibrate"}}},
			"shout": map[string]any{"input": map[string]any{"type": "string"},
				"forms": []any{map[string]any{"href": "https://backend.example/shout"}}},
		},
		"events": map[string]any{
			"alarm": map[string]any{"data": map[string]any{"type": "string"},
				"forms": []any{map[string]any{"href": "https://backend.example/alarm"}}},
		},
	}
	if types != nil {
		doc["@type"] = types
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatalf("test TD: %v", err)
	}
	return td
}

// device is the Go SDK Thing behind deviceTD.
func device() *interact.Thing {
	var mu sync.Mutex
	target := lmosproto.StringValue("unset")
	th := interact.NewThing()
	th.OnProperty("target",
		func(context.Context) (lmosproto.Value, error) { mu.Lock(); defer mu.Unlock(); return target, nil },
		func(_ context.Context, v lmosproto.Value) error { mu.Lock(); defer mu.Unlock(); target = v; return nil })
	th.OnProperty("model", func(context.Context) (lmosproto.Value, error) { return lmosproto.StringValue("T-1000"), nil }, nil)
	th.OnAction("add", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var ab struct{ A, B float64 }
		if err := in.Decode(&ab); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.ValueOf(ab.A + ab.B)
	})
	th.OnAction("calibrate", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
		progress(lmosproto.StringValue("warming up"))
		<-ctx.Done() // runs until cancelled
		return lmosproto.Value{}, ctx.Err()
	})
	th.OnStream("shout", func(_ context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		for v := range in {
			var s string
			if err := v.Decode(&s); err != nil {
				return err
			}
			if err := out(lmosproto.StringValue(strings.ToUpper(s))); err != nil {
				return err
			}
		}
		return nil
	})
	return th
}

// pair starts an owner node with the device registered and a consumer
// node that learned it.
func pair(t *testing.T) (owner, consumer *node.Node, id string, th *interact.Thing) {
	t.Helper()
	id = testnet.UniqueID(t)
	owner, consumer, th, err := pairTD(t, deviceTD(t, id))
	if err != nil {
		t.Fatal(err)
	}
	return owner, consumer, id, th
}

// pairTD is pair with the device's TD td; err is the owner's refusal to
// register it.
func pairTD(t *testing.T, td *lmosproto.TD) (owner, consumer *node.Node, th *interact.Thing, err error) {
	t.Helper()
	return pairTDWith(t, td, testnet.Options{})
}

// pairTDWith is pairTD with the nodes built with opts.
func pairTDWith(t *testing.T, td *lmosproto.TD, opts testnet.Options) (owner, consumer *node.Node, th *interact.Thing, err error) {
	t.Helper()
	net := testnet.New(t, 2, opts)
	owner, consumer = net.Nodes[0], net.Nodes[1]
	id := td.ID
	th = device()
	if _, err := owner.Register(td, th); err != nil {
		return nil, nil, nil, err
	}
	net.Link(1, 0)
	testnet.WaitFor(t, "consumer learns the Thing", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
	return owner, consumer, th, nil
}

type api struct {
	t    *testing.T
	base string
	hc   *http.Client
	// token is the node's API token, sent on the node-admin routes
	// (/api/…) only: the binding's calls need none on loopback, unless
	// the node requires it for all requests (all).
	token string
	all   bool
}

func newAPI(t *testing.T, n *node.Node) *api {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &api{t: t, base: "http://" + n.APIAddr(), hc: &http.Client{Transport: tr}, token: n.APIToken(),
		all: n.Config().APIAuth.RequireTokenFor == config.TokenForAll}
}

func (a *api) do(method, path, body string) (int, http.Header, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	path, accept, _ := strings.Cut(path, "?accept=")
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", "application/"+accept)
	}
	if a.all || strings.HasPrefix(path, "/api/") {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (a *api) expect(method, path, body string, status int) []byte {
	a.t.Helper()
	got, _, b := a.do(method, path, body)
	if got != status {
		a.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, status, b)
	}
	return b
}

// sse opens an event stream and returns its data lines.
func (a *api) sse(ctx context.Context, path string) <-chan string {
	a.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, b)
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- d
			} else if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				out <- "event:" + e
			}
		}
	}()
	return out
}

func thingPath(id string) string { return "/things/" + url.PathEscape(id) }

// A consumer talking only to its own node's HTTP API reads, writes,
// invokes and subscribes across nodes.
func TestCrossNode(t *testing.T) {
	_, consumer, id, th := pair(t)
	c := newAPI(t, consumer)
	p := thingPath(id)

	if b := c.expect("GET", p+"/properties/model", "", 200); string(b) != `"T-1000"` {
		t.Errorf("read model = %s", b)
	}
	c.expect("PUT", p+"/properties/target", `21.5`, 204)
	if b := c.expect("GET", p+"/properties/target", "", 200); string(b) != `21.5` {
		t.Errorf("read target after write = %s", b)
	}
	if b := c.expect("POST", p+"/actions/add", `{"a": 2, "b": 40}`, 200); string(b) != `42` {
		t.Errorf("add = %s", b)
	}

	// Long-running: 201 + Location, query, cancel.
	code, hdr, b := c.do("POST", p+"/actions/calibrate", "")
	if code != 201 || hdr.Get("Location") == "" {
		t.Fatalf("calibrate: %d %v %s", code, hdr, b)
	}
	loc := hdr.Get("Location")
	var st struct{ Status, Output string }
	if err := json.Unmarshal(c.expect("GET", loc, "", 200), &st); err != nil || st.Status != lmosproto.ActionRunning {
		t.Errorf("query calibrate: %+v %v", st, err)
	}
	if err := json.Unmarshal(c.expect("DELETE", loc, "", 200), &st); err != nil || st.Status != lmosproto.ActionCancelled {
		t.Errorf("cancel calibrate: %+v %v", st, err)
	}
	c.expect("GET", p+"/actions/calibrate/no-such-invocation", "", 404)

	// Events and observation over SSE.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.sse(ctx, p+"/events/alarm")
	testnet.WaitFor(t, "subscription reaches the owner", 10*time.Second, func() (bool, string) {
		return th.Emit("alarm", lmosproto.StringValue("too hot")) > 0, "no subscriber yet"
	})
	if d := <-events; d != `"too hot"` {
		t.Errorf("event data = %q", d)
	}
	readings := c.sse(ctx, p+"/properties/target/observe")
	testnet.WaitFor(t, "observation reaches the owner", 10*time.Second, func() (bool, string) {
		return th.Changed("target", lmosproto.StringValue("x")) > 0, "no observer yet"
	})
	if d := <-readings; d != `"x"` {
		t.Errorf("observed = %q", d)
	}
	cancel()
	for range events {
	}
	for range readings {
	}
}

func TestErrors(t *testing.T) {
	_, consumer, id, _ := pair(t)
	c := newAPI(t, consumer)
	p := thingPath(id)
	for _, tc := range []struct {
		method, path, body string
		status             int
		detail             string
	}{
		{"GET", "/things/urn:nope/properties/x", "", 404, "urn:nope"},
		{"GET", p + "/properties/nope", "", 404, "nope"},
		{"GET", p + "/events/nope", "", 404, "nope"},
		{"POST", p + "/actions/add", `{"a": 1}`, 400, "b"},
		{"POST", p + "/actions/add", `{"a": "one", "b": 2}`, 400, "/a"},
		{"POST", p + "/actions/add", `{not json`, 400, "JSON"},
		{"PUT", p + "/properties/model", `"x"`, 405, "model"},
		{"GET", p + "/properties/model/observe", "", 405, "model"},
		{"GET", p + "?publisher=garbage", "", 400, "publisher"},
		{"PATCH", p + "/properties/model", "", 405, "PATCH"},
		{"GET", p + "/properties/model?accept=xml", "", 406, "application/json or application/cbor only"},
		{"GET", p + "/td?accept=cbor", "", 406, "application/json only"},
	} {
		code, hdr, b := c.do(tc.method, tc.path, tc.body)
		if code != tc.status || !strings.Contains(string(b), tc.detail) {
			t.Errorf("%s %s %s: %d %s, want %d naming %s", tc.method, tc.path, tc.body, code, b, tc.status, tc.detail)
		}
		if code >= 400 && hdr.Get("Content-Type") != "application/problem+json" && tc.path != p+"?publisher=garbage" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, hdr.Get("Content-Type"))
		}
	}
}

// The consumer view of a TD points every form at the consumer's node and
// carries no proof.
func TestConsumerView(t *testing.T) {
	owner, consumer, id, _ := pair(t)
	c := newAPI(t, consumer)
	b := c.expect("GET", thingPath(id)+"/td", "", 200)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["proof"]; ok {
		t.Error("consumer view keeps the proof")
	}
	// The context leads with TD 1.0 and TD 1.1 and keeps the LMOS binding.
	ldctx, _ := json.Marshal(doc["@context"])
	if want := `["` + lmosproto.ContextTD10 + `","` + lmosproto.ContextTD11 + `",{"lmos":"` + lmosproto.ContextLMOS + `"}]`; string(ldctx) != want {
		t.Errorf("@context = %s, want %s", ldctx, want)
	}
	prop := doc["properties"].(map[string]any)["target"].(map[string]any)
	forms := prop["forms"].([]any)
	if len(forms) != 4 {
		t.Fatalf("target forms: %v", forms)
	}
	// The last is the WebSocket binding's (spec/lmos/11-websocket_binding.md).
	wsForm := forms[3].(map[string]any)
	if wsForm["href"] != "ws://"+consumer.APIAddr()+"/ws" || wsForm["subprotocol"] != lmosproto.WebSocketSubprotocol {
		t.Errorf("WebSocket form: %v", wsForm)
	}
	if ops, _ := json.Marshal(wsForm["op"]); string(ops) != `["readproperty","writeproperty","observeproperty","unobserveproperty"]` {
		t.Errorf("WebSocket form ops: %s", ops)
	}
	forms = forms[:3]
	want := c.base + thingPath(id) + "/properties/target"
	for _, f := range forms {
		href := f.(map[string]any)["href"].(string)
		if !strings.HasPrefix(href, want) {
			t.Errorf("form href %q, want prefix %q", href, want)
		}
	}
	if m := forms[1].(map[string]any)["htv:methodName"]; m != "PUT" {
		t.Errorf("writeproperty method %v", m)
	}
	model := doc["properties"].(map[string]any)["model"].(map[string]any)["forms"].([]any)
	if len(model) != 2 || model[0].(map[string]any)["op"] != "readproperty" || model[1].(map[string]any)["op"] != "readproperty" {
		t.Errorf("readOnly model forms: %v", model)
	}
	// Pinned to the publisher, the hrefs keep naming it.
	b = c.expect("GET", thingPath(id)+"/td?publisher="+owner.PeerID().String(), "", 200)
	if !bytes.Contains(b, []byte("?publisher="+owner.PeerID().String())) {
		t.Errorf("pinned view lacks ?publisher in hrefs: %s", b)
	}
	// Follow a form of the view.
	ev := doc["actions"].(map[string]any)["add"].(map[string]any)["forms"].([]any)[0].(map[string]any)
	resp, err := c.hc.Post(ev["href"].(string), "application/json", strings.NewReader(`{"a":1,"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(out) != "3" {
		t.Errorf("invoke via form: %d %s", resp.StatusCode, out)
	}
	// Follow the action's WebSocket form as the LMOS binding says: its
	// href, upgraded with its subprotocol.
	wf := doc["actions"].(map[string]any)["add"].(map[string]any)["forms"].([]any)[1].(map[string]any)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wf["href"].(string), &websocket.DialOptions{Subprotocols: []string{wf["subprotocol"].(string)}})
	if err != nil {
		t.Fatalf("dial the WebSocket form %v: %v", wf, err)
	}
	defer conn.CloseNow()
	req := lmosproto.NewMessage(id, lmosproto.MsgInvokeAction)
	req.Name = "add"
	if req.Input, err = lmosproto.ParseValue([]byte(`{"a":2,"b":3}`)); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(req)
	if err := conn.Write(ctx, websocket.MessageText, raw); err != nil {
		t.Fatal(err)
	}
	for {
		_, raw, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the WebSocket form's replies: %v", err)
		}
		var m lmosproto.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == lmosproto.MsgError || m.EndsAction() {
			if m.Status != lmosproto.ActionCompleted || m.Output.String() != "5" {
				t.Errorf("invoke via the WebSocket form: %s", raw)
			}
			break
		}
	}
}

// A Thing published with --backend URL is served by that HTTP service;
// when it goes down, consumers get 502.
func TestHTTPBackend(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer := net.Nodes[0], net.Nodes[1]
	mux := http.NewServeMux()
	mux.HandleFunc("GET /properties/model", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `"from-backend"`)
	})
	mux.HandleFunc("POST /actions/add", func(w http.ResponseWriter, r *http.Request) {
		var ab struct{ A, B float64 }
		if err := json.NewDecoder(r.Body).Decode(&ab); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ab.A * ab.B)
	})
	var polls sync.Mutex
	pollCount := 0
	mux.HandleFunc("POST /actions/calibrate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/jobs/1")
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /jobs/1", func(w http.ResponseWriter, r *http.Request) {
		polls.Lock()
		pollCount++
		n := pollCount
		polls.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		if n < 2 {
			_, _ = io.WriteString(w, `{"status": "running"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status": "completed", "output": "calibrated"}`)
	})
	backend := httptest.NewServer(mux)
	defer backend.Close()

	id := testnet.UniqueID(t)
	td := deviceTD(t, id)
	raw, err := json.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	o := newAPI(t, owner)
	o.expect("POST", "/api/v1/things", `{"td": `+string(raw)+`, "backend": "`+backend.URL+`"}`, 201)
	net.Link(1, 0)
	testnet.WaitFor(t, "consumer learns the Thing", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
	c := newAPI(t, consumer)
	p := thingPath(id)
	if b := c.expect("GET", p+"/properties/model", "", 200); string(b) != `"from-backend"` {
		t.Errorf("model = %s", b)
	}
	if b := c.expect("POST", p+"/actions/add", `{"a": 6, "b": 7}`, 200); string(b) != `42` {
		t.Errorf("add = %s", b)
	}
	c.expect("GET", p+"/properties/target", "", 404) // the backend has no such route

	// A long-running action of the backend (201 + Location there) is one
	// here too; the consumer follows it to its end.
	code, hdr, b := c.do("POST", p+"/actions/calibrate", "")
	if code != 201 {
		t.Fatalf("calibrate: %d %s", code, b)
	}
	testnet.WaitFor(t, "calibration completes", 10*time.Second, func() (bool, string) {
		body := c.expect("GET", hdr.Get("Location"), "", 200)
		return bytes.Contains(body, []byte(`"completed"`)) && bytes.Contains(body, []byte(`"calibrated"`)), string(body)
	})
	backend.Close()
	code, _, b = c.do("GET", p+"/properties/model", "")
	if code != http.StatusBadGateway {
		t.Errorf("backend down: %d %s, want 502", code, b)
	}
}

// The node's Go API: Invoker reaches a Thing of another node.
func TestInvoker(t *testing.T) {
	_, consumer, id, _ := pair(t)
	req := lmosproto.NewMessage(id, lmosproto.MsgReadProperty)
	req.Name = "model"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := consumer.Invoker().Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m, ok := <-sess.Replies()
	if !ok || m.Type != lmosproto.MsgPropertyReading || string(m.Value.JSON()) != `"T-1000"` {
		t.Fatalf("reply %v %v", m, ok)
	}
	if _, err := consumer.Register(nil, nil); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Register(nil, nil) = %v", err)
	}
}

// Two publishers of one id are never merged: without ?publisher= the
// consumer gets 300 with candidates, with it each publisher's own Thing.
func TestTwoPublishers(t *testing.T) {
	net := testnet.New(t, 3, testnet.Options{})
	a, b, consumer := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	id := testnet.UniqueID(t)
	for i, n := range []*node.Node{a, b} {
		model := lmosproto.StringValue([]string{"from-a", "from-b"}[i])
		th := interact.NewThing().OnProperty("model", func(context.Context) (lmosproto.Value, error) { return model, nil }, nil)
		if _, err := n.Register(deviceTD(t, id), th); err != nil {
			t.Fatal(err)
		}
	}
	net.Link(2, 0)
	net.Link(2, 1)
	testnet.WaitFor(t, "consumer learns both", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) == 2, "not yet"
	})
	c := newAPI(t, consumer)
	p := thingPath(id) + "/properties/model"
	if body := c.expect("GET", p, "", http.StatusMultipleChoices); !bytes.Contains(body, []byte(a.PeerID().String())) || !bytes.Contains(body, []byte(`"candidates"`)) {
		t.Errorf("300 body lacks candidates: %s", body)
	}
	for n, want := range map[*node.Node]string{a: `"from-a"`, b: `"from-b"`} {
		if got := c.expect("GET", p+"?publisher="+n.PeerID().String(), "", 200); string(got) != want {
			t.Errorf("publisher %s: %s, want %s", n.PeerID(), got, want)
		}
	}
	// The owner itself prefers its own Thing.
	if got := newAPI(t, b).expect("GET", p, "", 200); string(got) != `"from-b"` {
		t.Errorf("own Thing first: %s", got)
	}
}

// A Thing published with a backend URL is served again after the node
// restarts on the same home (no Go handlers to re-register).
func TestBackendSurvivesRestart(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `"still here"`)
	}))
	defer backend.Close()
	cfg := testnet.Config(t)
	id := testnet.UniqueID(t)
	raw, err := json.Marshal(deviceTD(t, id))
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = n.Start(ctx)
		cancel()
		if err != nil {
			_ = n.Close()
			t.Fatal(err)
		}
		a := newAPI(t, n)
		if run == 0 {
			a.expect("POST", "/api/v1/things", `{"td": `+string(raw)+`, "backend": "`+backend.URL+`"}`, 201)
		}
		if got := a.expect("GET", thingPath(id)+"/properties/model", "", 200); string(got) != `"still here"` {
			t.Errorf("run %d: %s", run, got)
		}
		a.hc.CloseIdleConnections()
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A streaming session over HTTP: NDJSON chunks in, server-sent events
// out, interleaved, across nodes.
func TestStreamingSession(t *testing.T) {
	_, consumer, id, _ := pair(t)
	c := newAPI(t, consumer)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+thingPath(id)+"/actions/shout", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "text/event-stream")
	go func() { _, _ = io.WriteString(pw, "\"hello\"\n") }()
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("shout: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	nextLine := func() string {
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				return l
			}
		}
		return "EOF"
	}
	if l := nextLine(); l != `data: "HELLO"` {
		t.Fatalf("first chunk: %q", l)
	}
	if _, err := io.WriteString(pw, "\"world\"\n"); err != nil {
		t.Fatal(err)
	}
	if l := nextLine(); l != `data: "WORLD"` {
		t.Fatalf("second chunk: %q", l)
	}
	pw.Close() // streamEnd
	if l := nextLine(); l != "event: completed" {
		t.Fatalf("end: %q", l)
	}
}

// An action without a stream handler answers a session request as an
// ordinary invocation, even while the consumer keeps its body open.
func TestStreamingFallback(t *testing.T) {
	_, consumer, id, _ := pair(t)
	c := newAPI(t, consumer)
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+thingPath(id)+"/actions/add", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	go func() { _, _ = io.WriteString(pw, `{"a": 1, "b": 2}`+"\n") }()
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(b), "event: completed\ndata: 3\n") {
		t.Errorf("fallback: %d %q", resp.StatusCode, b)
	}
}
