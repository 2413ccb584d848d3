package node_test

// TestPatternTransportMatrix runs every LMOS interaction pattern over every
// transport a consumer can use, across two nodes linked by libp2p: the
// owner node registers a Go SDK Thing, the consumer reaches it through its
// own node (libp2p/Go Invoker, HTTP binding, WebSocket lmosprotocol) or,
// for MQTT, through the broker the owner node exposes its Things on.
//
// One-way over HTTP is a POST with the RFC 7240 preference
// "Prefer: respond-async", answered 202 at once.
//
// The owner registers its Thing after Start: publishing resyncs the
// node's MQTT gateway, so the Thing is on the broker at once.
//
// MQTT rows are skipped only when no mosquitto binary is installed (and
// LMOS_TEST_MQTT_URL is unset).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func matrixTD(t testing.TB, id string) *lmosproto.TD {
	t.Helper()
	form := func(n string) []any { return []any{map[string]any{"href": "https://matrix.invalid/" + n}} }
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Matrix " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
	}
	doc["actions"] = map[string]any{
		"note": map[string]any{"input": map[string]any{"type": "string"}, "forms": form("note")},
		"add": map[string]any{
			"input": map[string]any{"type": "object", "required": []string{"a", "b"},
				"properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}},
			"output": map[string]any{"type": "number"},
			"forms":  form("add"),
		},
		"job":   map[string]any{"output": map[string]any{"type": "string"}, "forms": form("job")},
		"wait":  map[string]any{"output": map[string]any{"type": "string"}, "forms": form("wait")},
		"shout": map[string]any{"input": map[string]any{"type": "string"}, "forms": form("shout")},
	}
	doc["events"] = map[string]any{
		"alarm": map[string]any{"data": map[string]any{"type": "string"}, "forms": form("alarm")},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatalf("matrix TD: %v", err)
	}
	return td
}

// matrixThing implements every pattern: note (one-way, reports its input
// on notes), add (request-reply), job (two progress reports, then "done"),
// shout (streaming session) and the event alarm (Emit).
func matrixThing(notes chan<- string) *interact.Thing {
	return interact.NewThing().
		OnAction("note", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			var s string
			_ = in.Decode(&s)
			notes <- s
			return lmosproto.Value{}, nil
		}).
		OnAction("add", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			var ab struct{ A, B float64 }
			if err := in.Decode(&ab); err != nil {
				return lmosproto.Value{}, err
			}
			return lmosproto.ValueOf(ab.A + ab.B)
		}).
		OnAction("job", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			for _, p := range []string{"step 1", "step 2"} {
				progress(lmosproto.StringValue(p))
				select {
				case <-ctx.Done():
					return lmosproto.Value{}, ctx.Err()
				case <-time.After(30 * time.Millisecond):
				}
			}
			return lmosproto.StringValue("done"), nil
		}).
		OnAction("wait", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			// Runs until cancelled, so a cancel never races its end.
			progress(lmosproto.StringValue("waiting"))
			select {
			case <-ctx.Done():
				return lmosproto.Value{}, ctx.Err()
			case <-time.After(20 * time.Second):
				return lmosproto.StringValue("not cancelled"), nil
			}
		}).
		OnStream("shout", func(_ context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
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
}

func rawValue(s string) lmosproto.Value {
	v, err := lmosproto.ParseValue([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

type matrix struct {
	owner, consumer *node.Node
	id              string
	thing           *interact.Thing
	notes           chan string
	broker          string // "" without mosquitto
	hc              *http.Client
	base            string
}

func TestPatternTransportMatrix(t *testing.T) {
	start := time.Now()
	broker := matrixBroker(t)
	id := testnet.UniqueID(t)
	notes := make(chan string, 16)
	thing := matrixThing(notes)
	tn := testnet.New(t, 1, testnet.Options{}) // the consumer
	ownerCfg := testnet.Config(t)
	ownerCfg.MQTT = broker
	owner, err := node.New(ownerCfg, node.WithLogger(testnet.Logger(t).With("node", "owner")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := owner.Close(); err != nil {
			t.Errorf("owner: Close: %v", err)
		}
	})
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := owner.Start(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Register(matrixTD(t, id), thing); err != nil {
		t.Fatal(err)
	}
	m := &matrix{owner: owner, consumer: tn.Nodes[0], id: id, thing: thing, notes: notes, broker: broker}
	testnet.Connect(t, m.consumer, m.owner)
	testnet.WaitFor(t, "consumer learns the Thing", 10*time.Second, func() (bool, string) {
		return len(m.consumer.Directory().Lookup(m.id)) > 0, "not yet"
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	m.hc = &http.Client{Transport: tr}
	m.base = "http://" + m.consumer.APIAddr() + "/things/" + url.PathEscape(m.id)

	type cell = func(t *testing.T, ctx context.Context)
	rows := []struct {
		pattern string
		cells   map[string]cell
	}{
		{"one-way", map[string]cell{"libp2p": m.oneWayGo, "http": m.oneWayHTTP, "ws": m.oneWayWS, "mqtt": m.oneWayMQTT}},
		{"request-reply", map[string]cell{"libp2p": m.reqReplyGo, "http": m.reqReplyHTTP, "ws": m.reqReplyWS, "mqtt": m.reqReplyMQTT}},
		{"multi-response", map[string]cell{"libp2p": m.progressGo, "http": m.progressHTTP, "ws": m.progressWS, "mqtt": m.progressMQTT}},
		{"event", map[string]cell{"libp2p": m.eventGo, "http": m.eventHTTP, "ws": m.eventWS, "mqtt": m.eventMQTT}},
		{"pubsub", map[string]cell{"libp2p": m.pubsubGo, "http": m.pubsubHTTP, "ws": m.pubsubWS, "mqtt": m.pubsubMQTT}},
		{"stream", map[string]cell{"libp2p": m.streamGo, "http": m.streamHTTP, "ws": m.streamWS, "mqtt": m.streamMQTT}},
		// A consumer finds the transport in the Thing's consumer view
		// (GET /things/{id}/td) and calls through the form it found.
		{"form", map[string]cell{"libp2p": m.formGo, "http": m.formHTTP, "ws": m.formWS, "mqtt": m.formMQTT}},
	}
	for _, row := range rows {
		for _, transport := range []string{"libp2p", "http", "ws", "mqtt"} {
			t.Run(row.pattern+"/"+transport, func(t *testing.T) {
				if transport == "mqtt" && m.broker == "" {
					t.Skip("mosquitto is not installed and LMOS_TEST_MQTT_URL is not set")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				m.drainNotes()
				row.cells[transport](t, ctx)
			})
		}
	}
	t.Logf("matrix took %v", time.Since(start).Round(time.Millisecond))
}

func (m *matrix) drainNotes() {
	for {
		select {
		case <-m.notes:
		default:
			return
		}
	}
}

func (m *matrix) wantNote(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-m.notes:
		if got != want {
			t.Fatalf("Thing got note %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Thing never got note %q", want)
	}
}

// emitUntil emits the alarm event every 50 ms until every subscriber has
// received one, and returns the data each received first.
func (m *matrix) emitUntil(t *testing.T, ctx context.Context, subs ...<-chan string) []string {
	t.Helper()
	got := make([]string, len(subs))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		m.thing.Emit("alarm", lmosproto.StringValue("fire"))
		done := true
		for i, c := range subs {
			if got[i] != "" {
				continue
			}
			select {
			case d, ok := <-c:
				if !ok {
					t.Fatalf("subscriber %d ended before an event", i)
				}
				got[i] = d
			default:
				done = false
			}
		}
		if done {
			for i, d := range got {
				if d != `"fire"` {
					t.Errorf("subscriber %d got %s", i, d)
				}
			}
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("events received: %q", got)
		case <-tick.C:
		}
	}
}

// ---- libp2p / Go SDK (consumer.Invoker) ----

func (m *matrix) invoke(t *testing.T, ctx context.Context, req *lmosproto.Message) interact.Session {
	t.Helper()
	s, err := m.consumer.Invoker().Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func collect(t testing.TB, ctx context.Context, s interact.Session) []*lmosproto.Message {
	t.Helper()
	var out []*lmosproto.Message
	for {
		select {
		case r, ok := <-s.Replies():
			if !ok {
				return out
			}
			out = append(out, r)
		case <-ctx.Done():
			t.Fatalf("replies so far %+v: %v", out, ctx.Err())
		}
	}
}

func (m *matrix) oneWayGo(t *testing.T, ctx context.Context) {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Name, req.Input, req.OneWay = "note", lmosproto.StringValue("go"), true
	if got := collect(t, ctx, m.invoke(t, ctx, req)); len(got) != 0 {
		t.Fatalf("one-way request got replies %+v", got)
	}
	m.wantNote(t, "go")
}

func (m *matrix) reqReplyGo(t *testing.T, ctx context.Context) {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Name, req.Input = "add", rawValue(`{"a":1,"b":2}`)
	got := collect(t, ctx, m.invoke(t, ctx, req))
	if len(got) == 0 || got[len(got)-1].Status != lmosproto.ActionCompleted || got[len(got)-1].Output.String() != "3" {
		t.Fatalf("replies %+v", got)
	}
}

func (m *matrix) progressGo(t *testing.T, ctx context.Context) {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Name = "job"
	checkProgress(t, collect(t, ctx, m.invoke(t, ctx, req)))
}

// checkProgress wants both progress reports (running) and then completed
// with "done".
func checkProgress(t *testing.T, got []*lmosproto.Message) {
	t.Helper()
	var progress []string
	for _, r := range got {
		if r.Type == lmosproto.MsgActionStatus && r.Status == lmosproto.ActionRunning && r.Output.String() != "" {
			progress = append(progress, r.Output.String())
		}
	}
	last := got[len(got)-1]
	if strings.Join(progress, ",") != `"step 1","step 2"` || last.Status != lmosproto.ActionCompleted || last.Output.String() != `"done"` {
		for _, r := range got {
			t.Logf("%s %s %s", r.Type, r.Status, r.Output)
		}
		t.Fatal("want two progress reports, then completed \"done\"")
	}
}

func goEvents(s interact.Session) <-chan string {
	c := make(chan string, 16)
	go func() {
		defer close(c)
		for r := range s.Replies() {
			d := r.Data.String()
			if r.Type != lmosproto.MsgEvent {
				d = fmt.Sprintf("%s %s %s", r.Type, r.Title, r.Detail)
			}
			offer(c, d)
		}
	}()
	return c
}

func (m *matrix) subscribeGo(t *testing.T, ctx context.Context) interact.Session {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgSubscribeEvent)
	req.Name = "alarm"
	return m.invoke(t, ctx, req)
}

func (m *matrix) eventGo(t *testing.T, ctx context.Context) {
	s := m.subscribeGo(t, ctx)
	ev := goEvents(s)
	m.emitUntil(t, ctx, ev)
	if err := s.Send(ctx, lmosproto.NewMessage("", lmosproto.MsgUnsubscribeEvent)); err != nil {
		t.Fatal(err)
	}
	// Unsubscribed, the session ends (after at most the events in flight).
	for {
		select {
		case _, ok := <-ev:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatal("session still open after unsubscribeEvent")
		}
	}
}

func (m *matrix) pubsubGo(t *testing.T, ctx context.Context) {
	m.emitUntil(t, ctx, goEvents(m.subscribeGo(t, ctx)), goEvents(m.subscribeGo(t, ctx)))
}

func (m *matrix) streamGo(t *testing.T, ctx context.Context) {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Name, req.Input, req.Stream = "shout", lmosproto.StringValue("hello"), true
	s := m.invoke(t, ctx, req)
	next := func() *lmosproto.Message {
		select {
		case r, ok := <-s.Replies():
			if !ok {
				t.Fatal("session ended")
			}
			return r
		case <-ctx.Done():
			t.Fatal(ctx.Err())
			return nil
		}
	}
	if r := next(); r.Type != lmosproto.MsgActionStatus || !r.Stream || r.Status != lmosproto.ActionRunning {
		t.Fatalf("session not accepted: %+v", r)
	}
	in := lmosproto.NewMessage("", lmosproto.MsgStreamInput)
	in.Input = lmosproto.StringValue("world")
	if err := s.Send(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, lmosproto.NewMessage("", lmosproto.MsgStreamEnd)); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for {
		r := next()
		if r.EndsAction() {
			if r.Status != lmosproto.ActionCompleted {
				t.Fatalf("ended with %+v", r)
			}
			break
		}
		outs = append(outs, r.Output.String())
	}
	if got := strings.Join(outs, " "); got != `"HELLO" "WORLD"` {
		t.Fatalf("outputs %s", got)
	}
}

// ---- HTTP binding (consumer's /things/{id}/…) ----

func (m *matrix) do(t *testing.T, ctx context.Context, method, u, ctype string, body io.Reader) *http.Response {
	t.Helper()
	if !strings.HasPrefix(u, "http") {
		u = m.base + u
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (m *matrix) oneWayHTTP(t *testing.T, ctx context.Context) {
	// One-way: the RFC 7240 preference respond-async gets 202 at once, and
	// the Thing still receives the input.
	req, err := http.NewRequestWithContext(ctx, "POST", m.base+"/actions/note", strings.NewReader(`"http"`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "respond-async")
	resp, err := m.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if b := readAll(t, resp.Body); resp.StatusCode != http.StatusAccepted || resp.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("POST note (respond-async): %d %s", resp.StatusCode, b)
	}
	m.wantNote(t, "http")
}

func (m *matrix) reqReplyHTTP(t *testing.T, ctx context.Context) {
	resp := m.do(t, ctx, "POST", "/actions/add", "application/json", strings.NewReader(`{"a":1,"b":2}`))
	if b := strings.TrimSpace(readAll(t, resp.Body)); resp.StatusCode != 200 || b != "3" {
		t.Fatalf("POST add: %d %s", resp.StatusCode, b)
	}
}

func (m *matrix) progressHTTP(t *testing.T, ctx context.Context) {
	resp := m.do(t, ctx, "POST", "/actions/job", "", nil)
	b := readAll(t, resp.Body)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusCreated || loc == "" {
		t.Fatalf("POST job: %d %s (Location %q)", resp.StatusCode, b, loc)
	}
	lu, err := url.Parse(m.base)
	if err != nil {
		t.Fatal(err)
	}
	ru, err := lu.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for {
		r := m.do(t, ctx, "GET", ru.String(), "", nil)
		var st struct {
			Status string
			Output json.RawMessage
		}
		raw := readAll(t, r.Body)
		if r.StatusCode != 200 || json.Unmarshal([]byte(raw), &st) != nil {
			t.Fatalf("GET %s: %d %s", loc, r.StatusCode, raw)
		}
		seen[st.Status] = true
		if st.Status == lmosproto.ActionCompleted {
			if string(st.Output) != `"done"` {
				t.Fatalf("completed with %s", raw)
			}
			return
		}
		if st.Status != lmosproto.ActionRunning && st.Status != lmosproto.ActionPending {
			t.Fatalf("status %s", raw)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never completed; seen %v", seen)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type sseEvent struct{ event, data string }

// sse parses a text/event-stream into events (comments skipped).
func sse(r io.Reader) <-chan sseEvent {
	c := make(chan sseEvent, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		var ev sseEvent
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if ev.data != "" || ev.event != "" {
					c <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(l, "event: "):
				ev.event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				ev.data = strings.TrimPrefix(l, "data: ")
			}
		}
	}()
	return c
}

func sseData(in <-chan sseEvent) <-chan string {
	c := make(chan string, 16)
	go func() {
		defer close(c)
		for e := range in {
			if e.event != "" {
				offer(c, e.event+": "+e.data)
			} else {
				offer(c, e.data)
			}
		}
	}()
	return c
}

func (m *matrix) subscribeHTTP(t *testing.T, ctx context.Context) (<-chan string, context.CancelFunc) {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	resp := m.do(t, sctx, "GET", "/events/alarm", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return sseData(sse(resp.Body)), cancel
}

func (m *matrix) eventHTTP(t *testing.T, ctx context.Context) {
	ev, unsubscribe := m.subscribeHTTP(t, ctx)
	m.emitUntil(t, ctx, ev)
	unsubscribe() // closing the connection unsubscribes
	for range ev {
	}
}

func (m *matrix) pubsubHTTP(t *testing.T, ctx context.Context) {
	a, _ := m.subscribeHTTP(t, ctx)
	b, _ := m.subscribeHTTP(t, ctx)
	m.emitUntil(t, ctx, a, b)
}

func (m *matrix) streamHTTP(t *testing.T, ctx context.Context) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	go func() { _, _ = io.WriteString(pw, "\"hello\"\n") }()
	req, err := http.NewRequestWithContext(ctx, "POST", m.base+"/actions/shout", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := m.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST shout: %d %s", resp.StatusCode, readAll(t, resp.Body))
	}
	events := sse(resp.Body)
	next := func() sseEvent {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			return e
		case <-ctx.Done():
			t.Fatal(ctx.Err())
			return sseEvent{}
		}
	}
	if e := next(); e != (sseEvent{data: `"HELLO"`}) {
		t.Fatalf("first chunk %+v", e)
	}
	if _, err := io.WriteString(pw, "\"world\"\n"); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != (sseEvent{data: `"WORLD"`}) {
		t.Fatalf("second chunk %+v", e)
	}
	_ = pw.Close() // streamEnd
	if e := next(); e.event != "completed" {
		t.Fatalf("end %+v", e)
	}
}

// ---- WebSocket lmosprotocol (consumer's /ws) ----

// wsMessages reads a socket into a channel until it fails.
func wsMessages(ctx context.Context, c *websocket.Conn) <-chan *lmosproto.Message {
	out := make(chan *lmosproto.Message, 32)
	go func() {
		defer close(out)
		for {
			_, raw, err := c.Read(ctx)
			if err != nil {
				return
			}
			var msg lmosproto.Message
			if err := json.Unmarshal(raw, &msg); err != nil {
				return
			}
			out <- &msg
		}
	}()
	return out
}

func wsNext(t *testing.T, ctx context.Context, in <-chan *lmosproto.Message) *lmosproto.Message {
	t.Helper()
	select {
	case r, ok := <-in:
		if !ok {
			t.Fatal("socket closed")
		}
		return r
	case <-ctx.Done():
		t.Fatal(ctx.Err())
		return nil
	}
}

func (m *matrix) ws(t *testing.T, ctx context.Context) (*websocket.Conn, <-chan *lmosproto.Message) {
	t.Helper()
	c := wsDial(t, ctx, m.consumer.APIAddr(), "/ws")
	return c, wsMessages(ctx, c)
}

func (m *matrix) wsInvoke(name string, input lmosproto.Value) *lmosproto.Message {
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Name, req.Input, req.CorrelationID = name, input, uuid.NewString()
	return req
}

// wsUntilFinal reads one interaction's replies up to its final status.
func wsUntilFinal(t *testing.T, ctx context.Context, in <-chan *lmosproto.Message, corr string) []*lmosproto.Message {
	t.Helper()
	var out []*lmosproto.Message
	for {
		r := wsNext(t, ctx, in)
		if r.CorrelationID != corr {
			t.Fatalf("reply of another interaction: %+v", r)
		}
		out = append(out, r)
		if r.Type == lmosproto.MsgError || r.EndsAction() {
			return out
		}
	}
}

func (m *matrix) oneWayWS(t *testing.T, ctx context.Context) {
	c, in := m.ws(t, ctx)
	req := m.wsInvoke("note", lmosproto.StringValue("ws"))
	req.OneWay = true
	wsSend(t, ctx, c, req)
	m.wantNote(t, "ws")
	// Nothing came back for it: the next message is the reply to this add.
	add := m.wsInvoke("add", rawValue(`{"a":2,"b":2}`))
	wsSend(t, ctx, c, add)
	if got := wsUntilFinal(t, ctx, in, add.CorrelationID); got[len(got)-1].Output.String() != "4" {
		t.Fatalf("add: %+v", got)
	}
}

func (m *matrix) reqReplyWS(t *testing.T, ctx context.Context) {
	c, in := m.ws(t, ctx)
	req := m.wsInvoke("add", rawValue(`{"a":1,"b":2}`))
	wsSend(t, ctx, c, req)
	got := wsUntilFinal(t, ctx, in, req.CorrelationID)
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCompleted || last.Output.String() != "3" {
		t.Fatalf("replies %+v", got)
	}
}

func (m *matrix) progressWS(t *testing.T, ctx context.Context) {
	c, in := m.ws(t, ctx)
	req := m.wsInvoke("job", lmosproto.Value{})
	wsSend(t, ctx, c, req)
	checkProgress(t, wsUntilFinal(t, ctx, in, req.CorrelationID))
}

func (m *matrix) subscribeWS(t *testing.T, ctx context.Context) (*websocket.Conn, <-chan string, string) {
	t.Helper()
	c, in := m.ws(t, ctx)
	req := lmosproto.NewMessage(m.id, lmosproto.MsgSubscribeEvent)
	req.Name, req.CorrelationID = "alarm", uuid.NewString()
	wsSend(t, ctx, c, req)
	ev := make(chan string, 16)
	go func() {
		defer close(ev)
		for r := range in {
			if r.Type == lmosproto.MsgEvent && r.CorrelationID == req.CorrelationID {
				offer(ev, r.Data.String())
			} else {
				offer(ev, fmt.Sprintf("%s %s %s %s", r.Type, r.Status, r.Title, r.Detail))
			}
		}
	}()
	return c, ev, req.CorrelationID
}

func (m *matrix) eventWS(t *testing.T, ctx context.Context) {
	c, ev, corr := m.subscribeWS(t, ctx)
	m.emitUntil(t, ctx, ev)
	un := lmosproto.NewMessage(m.id, lmosproto.MsgUnsubscribeEvent)
	un.Name, un.CorrelationID = "alarm", corr
	wsSend(t, ctx, c, un)
	// Unsubscribed: once what was in flight is read, emitting more brings
	// nothing on the socket.
	time.Sleep(200 * time.Millisecond)
	for len(ev) > 0 {
		<-ev
	}
	m.thing.Emit("alarm", lmosproto.StringValue("fire"))
	select {
	case r := <-ev:
		t.Fatalf("after unsubscribeEvent: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
}

func (m *matrix) pubsubWS(t *testing.T, ctx context.Context) {
	_, a, _ := m.subscribeWS(t, ctx)
	_, b, _ := m.subscribeWS(t, ctx)
	m.emitUntil(t, ctx, a, b)
}

func (m *matrix) streamWS(t *testing.T, ctx context.Context) {
	c, in := m.ws(t, ctx)
	req := m.wsInvoke("shout", lmosproto.StringValue("hello"))
	req.Stream = true
	wsSend(t, ctx, c, req)
	if r := wsNext(t, ctx, in); r.Type != lmosproto.MsgActionStatus || !r.Stream || r.Status != lmosproto.ActionRunning {
		t.Fatalf("session not accepted: %+v", r)
	}
	chunk := lmosproto.NewMessage(m.id, lmosproto.MsgStreamInput)
	chunk.Name, chunk.CorrelationID, chunk.Input = "shout", req.CorrelationID, lmosproto.StringValue("world")
	wsSend(t, ctx, c, chunk)
	end := lmosproto.NewMessage(m.id, lmosproto.MsgStreamEnd)
	end.Name, end.CorrelationID = "shout", req.CorrelationID
	wsSend(t, ctx, c, end)
	got := wsUntilFinal(t, ctx, in, req.CorrelationID)
	var outs []string
	for _, r := range got[:len(got)-1] {
		outs = append(outs, r.Output.String())
	}
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCompleted || strings.Join(outs, " ") != `"HELLO" "WORLD"` {
		t.Fatalf("session %+v, outputs %v", last, outs)
	}
}

// ---- MQTT (the broker the owner node exposes its Things on) ----

type mqttClient struct {
	t   *testing.T
	cm  *autopaho.ConnectionManager
	mu  sync.Mutex
	sub map[string]chan *paho.Publish // by topic
}

func (m *matrix) mqtt(t *testing.T) *mqttClient {
	t.Helper()
	u, err := url.Parse(m.broker)
	if err != nil {
		t.Fatal(err)
	}
	c := &mqttClient{t: t, sub: map[string]chan *paho.Publish{}}
	cm, err := autopaho.NewConnection(context.Background(), autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     30,
		CleanStartOnInitialConnection: true,
		ClientConfig: paho.ClientConfig{
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				c.mu.Lock()
				ch := c.sub[pr.Packet.Topic]
				c.mu.Unlock()
				if ch != nil {
					select {
					case ch <- pr.Packet:
					default:
					}
				}
				return true, nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.cm = cm
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cm.Disconnect(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *mqttClient) subscribe(ctx context.Context, topic string) <-chan *paho.Publish {
	c.t.Helper()
	ch := make(chan *paho.Publish, 64)
	c.mu.Lock()
	c.sub[topic] = ch
	c.mu.Unlock()
	if _, err := c.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		c.t.Fatalf("subscribe %q: %v", topic, err)
	}
	return ch
}

func (c *mqttClient) publish(ctx context.Context, p *paho.Publish) {
	c.t.Helper()
	p.QoS = 1
	if _, err := c.cm.Publish(ctx, p); err != nil {
		c.t.Fatalf("publish %q: %v", p.Topic, err)
	}
}

func (m *matrix) topic(rest string) string { return mqttgw.EscapeTopicLevel(m.id) + "/" + rest }

// mqttRequest publishes a v5 request on topic and returns its replies up
// to the terminal one. It resends while the gateway is not serving the
// Thing yet (a request before its subscription is lost).
func (m *matrix) mqttRequest(t *testing.T, ctx context.Context, c *mqttClient, topic string, payload []byte) []*lmosproto.Message {
	t.Helper()
	resp := "matrix/replies/" + uuid.NewString()
	replies := c.subscribe(ctx, resp)
	corr := []byte(uuid.NewString())
	var out []*lmosproto.Message
	for {
		if len(out) == 0 {
			c.publish(ctx, &paho.Publish{Topic: topic, Payload: payload,
				Properties: &paho.PublishProperties{ResponseTopic: resp, CorrelationData: corr}})
		}
		select {
		case p := <-replies:
			if p.Properties == nil || !bytes.Equal(p.Properties.CorrelationData, corr) {
				t.Fatalf("reply without the correlation data: %+v", p.Properties)
			}
			var msg lmosproto.Message
			if err := lmosproto.JSON.Unmarshal(p.Payload, &msg); err != nil {
				t.Fatalf("reply %s: %v", p.Payload, err)
			}
			out = append(out, &msg)
			if msg.Type == lmosproto.MsgError || msg.Type == lmosproto.MsgPropertyReading || msg.EndsAction() {
				return out
			}
		case <-time.After(time.Second):
			if len(out) > 0 {
				t.Fatalf("replies stopped: %+v", out)
			}
		case <-ctx.Done():
			t.Fatalf("replies %+v: %v", out, ctx.Err())
		}
	}
}

func (m *matrix) oneWayMQTT(t *testing.T, ctx context.Context) {
	c := m.mqtt(t)
	// Make sure the gateway serves the Thing, then publish without a
	// response topic: one-way.
	m.mqttRequest(t, ctx, c, m.topic("actions/add"), []byte(`{"a":1,"b":1}`))
	c.publish(ctx, &paho.Publish{Topic: m.topic("actions/note"), Payload: []byte(`"mqtt"`)})
	m.wantNote(t, "mqtt")
}

func (m *matrix) reqReplyMQTT(t *testing.T, ctx context.Context) {
	got := m.mqttRequest(t, ctx, m.mqtt(t), m.topic("actions/add"), []byte(`{"a":1,"b":2}`))
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCompleted || last.Output.String() != "3" {
		t.Fatalf("replies %+v", got)
	}
}

func (m *matrix) progressMQTT(t *testing.T, ctx context.Context) {
	c := m.mqtt(t)
	checkProgress(t, m.mqttRequest(t, ctx, c, m.topic("actions/job"), nil))
	// A running invocation is cancelled by a cancelAction envelope on the
	// action topic with the invocation's correlation data.
	s := m.mqttOpen(t, ctx, c, "wait", lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction))
	s.send(lmosproto.NewMessage(m.id, lmosproto.MsgCancelAction))
	got := s.untilFinal()
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCancelled {
		t.Fatalf("after cancelAction: %+v", last)
	}
}

// mqttSession is an invocation held open over the broker (v5 correlation
// data), with its follow-ups on the action topic.
type mqttSession struct {
	t       *testing.T
	ctx     context.Context
	c       *mqttClient
	m       *matrix
	name    string
	resp    string
	corr    []byte
	replies <-chan *paho.Publish
}

func (m *matrix) mqttOpen(t *testing.T, ctx context.Context, c *mqttClient, name string, req *lmosproto.Message) *mqttSession {
	t.Helper()
	s := &mqttSession{t: t, ctx: ctx, c: c, m: m, name: name,
		resp: "matrix/replies/" + uuid.NewString(), corr: []byte(uuid.NewString())}
	s.replies = c.subscribe(ctx, s.resp)
	s.send(req)
	return s
}

func (s *mqttSession) send(msg *lmosproto.Message) {
	s.t.Helper()
	msg.ThingID, msg.Name = s.m.id, s.name
	payload, err := lmosproto.JSON.Marshal(msg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.c.publish(s.ctx, &paho.Publish{Topic: s.m.topic("actions/" + s.name), Payload: payload,
		Properties: &paho.PublishProperties{ResponseTopic: s.resp, CorrelationData: s.corr}})
}

func (s *mqttSession) next() *lmosproto.Message {
	s.t.Helper()
	select {
	case p := <-s.replies:
		if p.Properties == nil || !bytes.Equal(p.Properties.CorrelationData, s.corr) {
			s.t.Fatalf("reply without the correlation data: %+v", p.Properties)
		}
		var msg lmosproto.Message
		if err := lmosproto.JSON.Unmarshal(p.Payload, &msg); err != nil {
			s.t.Fatalf("reply %s: %v", p.Payload, err)
		}
		return &msg
	case <-s.ctx.Done():
		s.t.Fatalf("no reply: %v", s.ctx.Err())
		return nil
	}
}

func (s *mqttSession) untilFinal() []*lmosproto.Message {
	s.t.Helper()
	var out []*lmosproto.Message
	for {
		msg := s.next()
		out = append(out, msg)
		if msg.Type == lmosproto.MsgError {
			s.t.Fatalf("error: %+v", msg)
		}
		if msg.EndsAction() {
			return out
		}
	}
}

// mqttEvents turns event PUBLISHes into event data until ctx ends.
func mqttEvents(ctx context.Context, in <-chan *paho.Publish) <-chan string {
	c := make(chan string, 16)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case p := <-in:
				var msg lmosproto.Message
				if err := lmosproto.JSON.Unmarshal(p.Payload, &msg); err != nil || msg.Type != lmosproto.MsgEvent {
					offer(c, string(p.Payload))
					continue
				}
				offer(c, msg.Data.String())
			}
		}
	}()
	return c
}

// offer passes s on unless c is full: subscribers need only their first
// events, and their goroutines must never block.
func offer(c chan<- string, s string) {
	select {
	case c <- s:
	default:
	}
}

func (m *matrix) eventMQTT(t *testing.T, ctx context.Context) {
	c := m.mqtt(t)
	topic := m.topic("events/alarm")
	ev := mqttEvents(ctx, c.subscribe(ctx, topic))
	m.emitUntil(t, ctx, ev)
	if _, err := c.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{topic}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for len(ev) > 0 {
		<-ev
	}
	m.thing.Emit("alarm", lmosproto.StringValue("fire"))
	select {
	case r := <-ev:
		t.Fatalf("after unsubscribe: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
}

func (m *matrix) pubsubMQTT(t *testing.T, ctx context.Context) {
	topic := m.topic("events/alarm")
	a := mqttEvents(ctx, m.mqtt(t).subscribe(ctx, topic))
	b := mqttEvents(ctx, m.mqtt(t).subscribe(ctx, topic))
	m.emitUntil(t, ctx, a, b)
}

func (m *matrix) streamMQTT(t *testing.T, ctx context.Context) {
	c := m.mqtt(t)
	// Make sure the gateway serves the Thing before holding a session.
	m.mqttRequest(t, ctx, c, m.topic("actions/add"), []byte(`{"a":1,"b":1}`))
	req := lmosproto.NewMessage(m.id, lmosproto.MsgInvokeAction)
	req.Input, req.Stream = lmosproto.StringValue("hello"), true
	s := m.mqttOpen(t, ctx, c, "shout", req)
	if r := s.next(); r.Type != lmosproto.MsgActionStatus || !r.Stream || r.Status != lmosproto.ActionRunning {
		t.Fatalf("session not accepted: %+v", r)
	}
	chunk := lmosproto.NewMessage(m.id, lmosproto.MsgStreamInput)
	chunk.Input = lmosproto.StringValue("world")
	s.send(chunk)
	s.send(lmosproto.NewMessage(m.id, lmosproto.MsgStreamEnd))
	got := s.untilFinal()
	var outs []string
	for _, r := range got[:len(got)-1] {
		outs = append(outs, r.Output.String())
	}
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCompleted || strings.Join(outs, " ") != `"HELLO" "WORLD"` {
		t.Fatalf("session %+v, outputs %v", last, outs)
	}
}

// matrixBroker returns an MQTT broker URL on 127.0.0.1: LMOS_TEST_MQTT_URL,
// or a mosquitto started for the test; "" when neither is available.
func matrixBroker(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("LMOS_TEST_MQTT_URL"); u != "" {
		return u
	}
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		for _, b := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
			if _, err := os.Stat(b); err == nil {
				bin = b
				break
			}
		}
	}
	if bin == "" {
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n", port)
	if os.Geteuid() == 0 {
		cfg += "user root\n"
	}
	cfgFile := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd := exec.Command(bin, "-c", cfgFile)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return "mqtt://" + addr
		}
		select {
		case <-exited:
			t.Fatalf("mosquitto exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- forms of the consumer view ----

// viewForms returns the forms of action name in node n's consumer view
// of the Thing.
func (m *matrix) viewForms(t *testing.T, n *node.Node, name string) []map[string]any {
	t.Helper()
	resp, err := m.hc.Get("http://" + n.APIAddr() + "/things/" + url.PathEscape(m.id) + "/td")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var td struct {
		Actions map[string]struct {
			Forms []map[string]any `json:"forms"`
		} `json:"actions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&td); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("consumer view: %d %v", resp.StatusCode, err)
	}
	return td.Actions[name].Forms
}

// viewForm returns the first form of action name in node n's consumer
// view that pick selects.
func (m *matrix) viewForm(t *testing.T, n *node.Node, name string, pick func(f map[string]any) bool) map[string]any {
	t.Helper()
	forms := m.viewForms(t, n, name)
	for _, f := range forms {
		if pick(f) {
			return f
		}
	}
	t.Fatalf("consumer view of %s has no such form for action %s: %v", n.PeerID(), name, forms)
	return nil
}

func hasOp(f map[string]any, op string) bool {
	switch o := f["op"].(type) {
	case string:
		return o == op
	case []any:
		return slices.Contains(o, any(op))
	}
	return false
}

func (m *matrix) formGo(t *testing.T, _ context.Context) {
	t.Skip("libp2p consumers (the Go SDK) address Things by id and need no forms")
}

func (m *matrix) formHTTP(t *testing.T, _ context.Context) {
	f := m.viewForm(t, m.consumer, "add", func(f map[string]any) bool {
		href, _ := f["href"].(string)
		return strings.HasPrefix(href, "http://") && f["htv:methodName"] == "POST" && hasOp(f, "invokeaction")
	})
	resp, err := m.hc.Post(f["href"].(string), "application/json", strings.NewReader(`{"a":1,"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "3" {
		t.Fatalf("POST %s: %d %s", f["href"], resp.StatusCode, b)
	}
}

func (m *matrix) formWS(t *testing.T, ctx context.Context) {
	f := m.viewForm(t, m.consumer, "add", func(f map[string]any) bool {
		return f["subprotocol"] == lmosproto.WebSocketSubprotocol && hasOp(f, "invokeaction")
	})
	href, _ := f["href"].(string)
	u, err := url.Parse(href)
	if err != nil || u.Scheme != "ws" {
		t.Fatalf("WebSocket form href %q", href)
	}
	c := wsDial(t, ctx, u.Host, u.Path)
	in := wsMessages(ctx, c)
	req := m.wsInvoke("add", rawValue(`{"a":1,"b":2}`))
	wsSend(t, ctx, c, req)
	if last := wsUntilFinal(t, ctx, in, req.CorrelationID); last[len(last)-1].Output.String() != "3" {
		t.Fatalf("replies %+v", last)
	}
}

func (m *matrix) formMQTT(t *testing.T, ctx context.Context) {
	isMQTT := func(f map[string]any) bool { return f["mqv:controlPacket"] != nil }
	// The owner runs the MQTT gateway and exposes its Thing there; the
	// consumer's node has no MQTT.
	f := m.viewForm(t, m.owner, "add", func(f map[string]any) bool { return isMQTT(f) && hasOp(f, "invokeaction") })
	if f["href"] != m.broker || f["mqv:controlPacket"] != "publish" {
		t.Fatalf("MQTT form %v, want href %s", f, m.broker)
	}
	for _, f := range m.viewForms(t, m.consumer, "add") {
		if isMQTT(f) {
			t.Errorf("the consumer's node runs no MQTT gateway, yet its view has %v", f)
		}
	}
	topic, _ := f["mqv:topic"].(string)
	got := m.mqttRequest(t, ctx, m.mqtt(t), topic, []byte(`{"a":1,"b":2}`))
	if last := got[len(got)-1]; last.Status != lmosproto.ActionCompleted || last.Output.String() != "3" {
		t.Fatalf("replies %+v", got)
	}
}
