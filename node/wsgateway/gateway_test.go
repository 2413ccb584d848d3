package wsgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/proto"
)

func TestSubprotocolNegotiation(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	t.Run("accepted", func(t *testing.T) {
		ws, resp, err := websocket.Dial(ctx, env.url, &websocket.DialOptions{Subprotocols: []string{"other", proto.WebSocketSubprotocol}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != proto.WebSocketSubprotocol {
			t.Fatalf("negotiated %q", got)
		}
		if ws.Subprotocol() != proto.WebSocketSubprotocol {
			t.Fatalf("Subprotocol() = %q", ws.Subprotocol())
		}
	})
	for name, protos := range map[string][]string{"none": nil, "other": {"mqtt", "v1.lmos"}} {
		t.Run("refused/"+name, func(t *testing.T) {
			_, resp, err := websocket.Dial(ctx, env.url, &websocket.DialOptions{Subprotocols: protos})
			if err == nil {
				t.Fatal("handshake without lmosprotocol accepted")
			}
			if resp == nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != proto.ContentTypeProblemJSON {
				t.Fatalf("Content-Type %q", ct)
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), proto.WebSocketSubprotocol) {
				t.Fatalf("body does not name the sub-protocol: %s", body)
			}
		})
	}
	t.Run("plain GET", func(t *testing.T) {
		resp, err := http.Get(env.srv.URL + "/ws")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// coder/websocket answers 426 in plain text; the node as a
		// problem, keeping the Upgrade header.
		if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Content-Type") != proto.ContentTypeProblemJSON ||
			!strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
			t.Fatalf("plain GET answered %d %q (Upgrade %q) %s, want a 426 problem", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Upgrade"), body)
		}
		var p proto.Problem
		if err := json.Unmarshal(body, &p); err != nil || p.Status != http.StatusUpgradeRequired || !strings.Contains(p.Detail, "Upgrade") {
			t.Fatalf("body %s: %v", body, err)
		}
	})
}

func TestRequestReply(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)

	req := invoke(t, "getWeather", map[string]string{"city": "Berlin"})
	c.send(req)
	got := c.recv()
	if got.Type != proto.MsgActionStatus || got.Status != proto.ActionCompleted || got.CorrelationID != req.MessageID {
		t.Fatalf("got %+v", got)
	}
	var out string
	if err := got.Output.Decode(&out); err != nil || out != "Sunny in Berlin" {
		t.Fatalf("output %s", got.Output)
	}

	read := proto.NewMessage(testThingID, proto.MsgReadProperty)
	read.Name = "temperature"
	read.CorrelationID = "5afb752f-8be0-4a3c-8108-1327a6009cbd"
	c.send(read)
	got = c.recv()
	if got.Type != proto.MsgPropertyReading || got.CorrelationID != read.CorrelationID || got.Value.String() != "21.5" {
		t.Fatalf("got %+v", got)
	}
}

func TestCBORFrames(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	req := invoke(t, "getWeather", map[string]string{"city": "Oslo"})
	data, err := proto.CBOR.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, data); err != nil {
		t.Fatal(err)
	}
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if typ != websocket.MessageBinary {
		t.Fatalf("reply in a %v frame, want binary", typ)
	}
	var m proto.Message
	if err := proto.CBOR.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != proto.ActionCompleted || m.CorrelationID != req.MessageID {
		t.Fatalf("got %+v", m)
	}
}

func TestLongRunningAction(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	req := invoke(t, "count", 5)
	c.send(req)
	var statuses []string
	for {
		m := c.recv()
		if m.CorrelationID != req.MessageID {
			t.Fatalf("correlationID %q, want %q", m.CorrelationID, req.MessageID)
		}
		statuses = append(statuses, m.Status+":"+m.Output.String())
		if m.EndsAction() {
			break
		}
	}
	want := "running:1 running:2 running:3 running:4 running:5 completed:5"
	if got := strings.Join(statuses, " "); got != want {
		t.Fatalf("statuses %q, want %q", got, want)
	}
}

func TestQueryAndCancelAction(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	req := invoke(t, "block", nil)
	c.send(req)
	if m := c.recv(); m.Status != proto.ActionRunning {
		t.Fatalf("got %+v", m)
	}
	<-env.blocked

	q := proto.NewMessage(testThingID, proto.MsgQueryAction)
	q.Name, q.CorrelationID = "block", req.MessageID
	c.send(q)
	if m := c.recv(); m.Type != proto.MsgActionStatus || m.Status != proto.ActionRunning || m.CorrelationID != req.MessageID {
		t.Fatalf("query answered %+v", m)
	}

	cancelMsg := proto.NewMessage(testThingID, proto.MsgCancelAction)
	cancelMsg.Name, cancelMsg.CorrelationID, cancelMsg.Reason = "block", req.MessageID, "test"
	c.send(cancelMsg)
	select {
	case <-env.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("action not cancelled")
	}
	for {
		m := c.recv()
		if m.CorrelationID != req.MessageID {
			t.Fatalf("got %+v", m)
		}
		if m.Status == proto.ActionCancelled {
			break
		}
	}
}

func TestSubscribeEvent(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	sub := proto.NewMessage(testThingID, proto.MsgSubscribeEvent)
	sub.Name = "alert"
	c.send(sub)
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("probe")) > 0 })
	m := c.recv()
	if m.Type != proto.MsgEvent || m.CorrelationID != sub.MessageID || m.Name != "alert" {
		t.Fatalf("got %+v", m)
	}
	env.thing.Emit("alert", proto.StringValue("fire"))
	for {
		m = c.recv()
		if m.Data.String() == `"fire"` {
			break
		}
	}

	// unsubscribe as in the spec's example: no correlationID
	unsub := proto.NewMessage(testThingID, proto.MsgUnsubscribeEvent)
	unsub.Name = "alert"
	c.send(unsub)
	// the backend's feed ends once the only subscriber is gone
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("drain")) == 0 })

	// the socket still works; events emitted before the unsubscribe took
	// effect may still arrive, but the subscription sends no error
	req := invoke(t, "getWeather", map[string]string{"city": "Rome"})
	c.send(req)
	for {
		m := c.recv()
		if m.Type == proto.MsgError {
			t.Fatalf("got %+v", m)
		}
		if m.CorrelationID == req.MessageID {
			break
		}
	}
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStreamingSession(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	req := invoke(t, "chat", "hello")
	req.Stream = true
	c.send(req)
	m := c.recv()
	if m.Type != proto.MsgActionStatus || !m.Stream || m.Status != proto.ActionRunning {
		t.Fatalf("session not accepted: %+v", m)
	}
	for _, s := range []string{"how", "are", "you"} {
		in := proto.NewMessage(testThingID, proto.MsgStreamInput)
		in.Name, in.CorrelationID, in.Input = "chat", req.MessageID, proto.StringValue(s)
		c.send(in)
	}
	end := proto.NewMessage(testThingID, proto.MsgStreamEnd)
	end.Name, end.CorrelationID = "chat", req.MessageID
	c.send(end)
	var outs []string
	for {
		m := c.recv()
		if m.CorrelationID != req.MessageID {
			t.Fatalf("got %+v", m)
		}
		if m.EndsAction() {
			if m.Status != proto.ActionCompleted {
				t.Fatalf("ended with %+v", m)
			}
			break
		}
		outs = append(outs, m.Output.String())
	}
	if got := strings.Join(outs, " "); got != `"HELLO" "HOW" "ARE" "YOU"` {
		t.Fatalf("outputs %s", got)
	}
}

func TestManyConcurrentInteractions(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	const n = 150
	want := map[string]string{}
	var sendMu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		req := invoke(t, "getWeather", map[string]string{"city": fmt.Sprintf("city-%d", i)})
		req.CorrelationID = proto.NewMessage("", "").MessageID
		want[req.CorrelationID] = fmt.Sprintf(`"Sunny in city-%d"`, i)
		wg.Go(func() {
			sendMu.Lock()
			defer sendMu.Unlock()
			c.send(req)
		})
	}
	// count reports interleave with the rest
	cnt := invoke(t, "count", 20)
	c.send(cnt)
	wg.Wait()
	seen := 0
	progress := 0
	for seen < n || progress < 21 {
		m := c.recv()
		if m.CorrelationID == cnt.MessageID {
			progress++
			continue
		}
		w, ok := want[m.CorrelationID]
		if !ok {
			t.Fatalf("reply for unknown or already answered correlationID: %+v", m)
		}
		if m.Output.String() != w {
			t.Fatalf("correlationID %s: output %s, want %s", m.CorrelationID, m.Output, w)
		}
		delete(want, m.CorrelationID)
		seen++
	}
}

func TestErrors(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)

	t.Run("not JSON", func(t *testing.T) {
		c.sendRaw([]byte(`{nope`))
		wantError(t, c.recv(), "400")
	})
	t.Run("text the decoder would rewrite", func(t *testing.T) {
		for _, frame := range []string{
			`{"thingID":"` + testThingID + `","messageID":"s1","messageType":"invokeAction","action":"getWeather","input":{"city":"\ud800"}}`,
			"{\"thingID\":\"" + testThingID + "\",\"messageID\":\"s2\",\"messageType\":\"invokeAction\",\"action\":\"getWeather\",\"input\":{\"city\":\"\xff\"}}",
		} {
			c.sendRaw([]byte(frame))
			m := c.recv()
			wantError(t, m, "400")
			if m.ThingID != testThingID || (m.CorrelationID != "s1" && m.CorrelationID != "s2") {
				t.Fatalf("got %+v", m)
			}
		}
	})
	t.Run("unknown message type names thing and correlation", func(t *testing.T) {
		c.sendRaw([]byte(`{"thingID":"urn:x","messageID":"m1","correlationID":"c1","messageType":"frobnicate"}`))
		m := c.recv()
		wantError(t, m, "400")
		if m.ThingID != "urn:x" || m.CorrelationID != "c1" || !strings.Contains(m.Detail, "frobnicate") {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("unknown thing", func(t *testing.T) {
		req := invoke(t, "getWeather", map[string]string{"city": "X"})
		req.ThingID = "urn:uuid:00000000-0000-4000-8000-000000000000"
		c.send(req)
		m := c.recv()
		wantError(t, m, "404")
		if m.CorrelationID != req.MessageID {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("invalid input", func(t *testing.T) {
		req := invoke(t, "getWeather", map[string]string{"town": "X"})
		c.send(req)
		wantError(t, c.recv(), "400")
	})
	t.Run("duplicate correlationID", func(t *testing.T) {
		req := invoke(t, "block", nil)
		c.send(req)
		if m := c.recv(); m.Status != proto.ActionRunning {
			t.Fatalf("got %+v", m)
		}
		<-env.blocked
		dup := invoke(t, "getWeather", map[string]string{"city": "X"})
		dup.CorrelationID = req.MessageID
		c.send(dup)
		m := c.recv()
		wantError(t, m, "409")
		if !strings.Contains(m.Detail, req.MessageID) {
			t.Fatalf("detail does not name the correlationID: %s", m.Detail)
		}
		cancelMsg := proto.NewMessage(testThingID, proto.MsgCancelAction)
		cancelMsg.Name, cancelMsg.CorrelationID = "block", req.MessageID
		c.send(cancelMsg)
		<-env.cancelled
		for m := c.recv(); m.Status != proto.ActionCancelled; m = c.recv() {
		}
	})
	t.Run("streamInput to a plain invocation", func(t *testing.T) {
		req := invoke(t, "block", nil)
		c.send(req)
		if m := c.recv(); m.Status != proto.ActionRunning {
			t.Fatalf("got %+v", m)
		}
		<-env.blocked
		in := proto.NewMessage(testThingID, proto.MsgStreamInput)
		in.Name, in.CorrelationID, in.Input = "block", req.MessageID, proto.StringValue("x")
		c.send(in)
		m := c.recv()
		wantError(t, m, "409")
		if m.CorrelationID != req.MessageID {
			t.Fatalf("got %+v", m)
		}
		cancelMsg := proto.NewMessage(testThingID, proto.MsgCancelAction)
		cancelMsg.Name, cancelMsg.CorrelationID = "block", req.MessageID
		c.send(cancelMsg)
		<-env.cancelled
		for m := c.recv(); m.Status != proto.ActionCancelled; m = c.recv() {
		}
	})
}

func TestSocketCloseCancelsSessions(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	sub := proto.NewMessage(testThingID, proto.MsgSubscribeEvent)
	sub.Name = "alert"
	c.send(sub)
	for range 3 {
		c.send(invoke(t, "block", nil))
	}
	for range 3 {
		<-env.blocked
	}
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("x")) > 0 })
	_ = c.ws.Close(websocket.StatusNormalClosure, "bye")
	for range 3 {
		select {
		case <-env.cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("action survived its socket")
		}
	}
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("x")) == 0 })
}

func TestSlowSubscriberDropped(t *testing.T) {
	env := newConsumerEnv(t, Config{QueueSize: 4})
	c := dial(t, env.url)
	sub := proto.NewMessage(testThingID, proto.MsgSubscribeEvent)
	sub.Name = "alert"
	c.send(sub)
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("x")) > 0 })
	// the client reads nothing while the Thing emits far more than the
	// queues hold; the subscription must be dropped, not buffered
	big := proto.StringValue(strings.Repeat("x", 16<<10))
	waitFor(t, func() bool {
		for range 100 {
			if env.thing.Emit("alert", big) == 0 {
				return true
			}
		}
		return false
	})
	for {
		m := c.recv()
		if m.Type == proto.MsgEvent {
			continue
		}
		wantError(t, m, "503")
		if m.CorrelationID != sub.MessageID {
			t.Fatalf("got %+v", m)
		}
		break
	}
	// the socket still serves
	req := invoke(t, "getWeather", map[string]string{"city": "Lima"})
	c.send(req)
	for m := c.recv(); m.CorrelationID != req.MessageID; m = c.recv() {
	}
}

func TestReadLimit(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	data := []byte(`{"thingID":"` + testThingID + `","messageID":"m1","messageType":"invokeAction","action":"getWeather","input":{"city":"` +
		strings.Repeat("x", proto.MaxMessageSize) + `"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.ws.Write(ctx, websocket.MessageText, data) // may fail once the node closes
	_, _, err := c.ws.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("read after an oversized message: %v, want close 1009", err)
	}
}

func TestGatewayClose(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	c.send(invoke(t, "block", nil))
	<-env.blocked
	if err := env.gw.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-env.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("action survived Gateway.Close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, env.url, &websocket.DialOptions{Subprotocols: []string{proto.WebSocketSubprotocol}})
	if err == nil {
		t.Fatal("dial after Close succeeded")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{QueueSize: -1, WriteTimeout: -1, InputQueueSize: -1, PingInterval: -1}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "QueueSize") || !strings.Contains(err.Error(), "WriteTimeout") || !strings.Contains(err.Error(), "InputQueueSize") {
		t.Fatalf("Validate: %v", err)
	}
	if _, err := NewGateway(GatewayDeps{}, Config{}); err == nil || !strings.Contains(err.Error(), "GatewayDeps.Invoker") {
		t.Fatalf("NewGateway without an Invoker: %v", err)
	}
	if _, err := NewAgentGateway(AgentDeps{}, Config{}); err == nil || !strings.Contains(err.Error(), "AgentDeps.Registrar") {
		t.Fatalf("NewAgentGateway without a Registrar: %v", err)
	}
}

func TestStuckReaderDisconnected(t *testing.T) {
	env := newConsumerEnv(t, Config{QueueSize: 2, WriteTimeout: 200 * time.Millisecond})
	c := dial(t, env.url)
	// the Thing produces as fast as it can; the consumer reads nothing.
	// The node must not buffer: once a write is stuck for WriteTimeout the
	// socket is dropped and the action cancelled.
	c.send(invoke(t, "flood", nil))
	select {
	case <-env.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("a consumer that reads nothing kept its action running")
	}
}

// A follow-up sent right behind its request is answered whether it
// reaches the interaction before or after the final status.
func TestFollowUpRacingTheEnd(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)
	const n = 50
	for range n {
		req := invoke(t, "getWeather", map[string]string{"city": "Q"})
		q := proto.NewMessage(testThingID, proto.MsgQueryAction)
		q.Name, q.CorrelationID = "getWeather", req.MessageID
		c.send(req)
		c.send(q)
	}
	got := map[string]int{}
	for range 2 * n {
		m := c.recv()
		if m.Type != proto.MsgActionStatus {
			t.Fatalf("got %+v", m)
		}
		got[m.CorrelationID]++
	}
	for corr, k := range got {
		if k != 2 {
			t.Fatalf("correlationID %s: %d replies, want 2", corr, k)
		}
	}
	if len(got) != n {
		t.Fatalf("%d interactions answered, want %d", len(got), n)
	}
}

func TestObserveAndSubscribeAll(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	c := dial(t, env.url)

	obs := proto.NewMessage(testThingID, proto.MsgObserveProperty)
	obs.Name = "temperature"
	c.send(obs)
	all := proto.NewMessage(testThingID, proto.MsgSubscribeAllEvents)
	c.send(all)
	waitFor(t, func() bool { return env.thing.Changed("temperature", mustValue(t, 30)) > 0 })
	waitFor(t, func() bool { return env.thing.Emit("alert", proto.StringValue("a")) > 0 })
	sawReading, sawEvent := false, false
	for !sawReading || !sawEvent {
		m := c.recv()
		switch {
		case m.Type == proto.MsgPropertyReading && m.CorrelationID == obs.MessageID:
			sawReading = true
		case m.Type == proto.MsgEvent && m.CorrelationID == all.MessageID:
			sawEvent = true
		default:
			t.Fatalf("got %+v", m)
		}
	}

	// both end without correlationID, matched by Thing and affordance
	unobs := proto.NewMessage(testThingID, proto.MsgUnobserveProperty)
	unobs.Name = "temperature"
	c.send(unobs)
	c.send(proto.NewMessage(testThingID, proto.MsgUnsubscribeAllEvents))
	waitFor(t, func() bool {
		return env.thing.Changed("temperature", mustValue(t, 31)) == 0 && env.thing.Emit("alert", proto.StringValue("b")) == 0
	})

	// a one-way invocation gets nothing back; the next reply is the read's
	ow := invoke(t, "getWeather", map[string]string{"city": "Nowhere"})
	ow.OneWay = true
	c.send(ow)
	read := proto.NewMessage(testThingID, proto.MsgReadProperty)
	read.Name = "temperature"
	c.send(read)
	for {
		m := c.recv()
		if m.CorrelationID == ow.MessageID {
			t.Fatalf("one-way request answered: %+v", m)
		}
		if m.CorrelationID == read.MessageID {
			break
		}
	}
}
