package interact

import (
	"context"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// fixture is one way to reach the test Thing: the Engine itself, or the
// Engine behind a libp2p stream, with the Go SDK or the HTTP backend.
type fixture struct {
	inv    Invoker
	state  *testThingState
	emit   func(event string, data proto.Value) int // → number of feeds reached
	change func(property string, v proto.Value) int // → number of feeds reached
}

type fixtureFunc func(t *testing.T, cfg EngineConfig) *fixture

// runPatterns runs every interaction pattern and error case against the
// fixtures newFixture makes.
func runPatterns(t *testing.T, newFixture fixtureFunc) {
	tests := []struct {
		name string
		cfg  EngineConfig
		run  func(t *testing.T, f *fixture)
	}{
		{"OneWay", EngineConfig{}, testOneWay},
		{"RequestReply", EngineConfig{}, testRequestReply},
		{"QueryAndCancel", EngineConfig{}, testQueryAndCancel},
		{"CancelInSession", EngineConfig{}, testCancelInSession},
		{"CloseCancels", EngineConfig{}, testCloseCancels},
		{"Progress", EngineConfig{}, testProgress},
		{"Observe", EngineConfig{}, testObserve},
		{"Events", EngineConfig{}, testEvents},
		{"AllEvents", EngineConfig{}, testAllEvents},
		{"Stream", EngineConfig{}, testStream},
		{"StreamInvalidChunk", EngineConfig{}, testStreamInvalidChunk},
		{"Errors", EngineConfig{}, testErrors},
		{"Timeout", EngineConfig{ActionTimeout: 200 * time.Millisecond}, testTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newFixture(t, tt.cfg)) })
	}
}

func TestPatternsEngine(t *testing.T) { runPatterns(t, engineFixture) }

func engineFixture(t *testing.T, cfg EngineConfig) *fixture {
	return authEngineFixture(t, nil, cfg)
}

// authEngineFixture is engineFixture with an engine that authorizes with
// authorize.
func authEngineFixture(t *testing.T, authorize AuthorizeFunc, cfg EngineConfig) *fixture {
	st := newTestState(t)
	th := newSDKThing(t, st)
	e, err := NewEngine(EngineDeps{Things: oneThing(t), Authorize: authorize}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.SetBackend(testThingID, th)
	t.Cleanup(func() { e.Close() })
	return &fixture{inv: e, state: st, emit: th.Emit, change: th.Changed}
}

func testOneWay(t *testing.T, f *fixture) {
	req := request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, 3)
	req.OneWay = true
	req.CorrelationID = proto.NewMessage("", "").MessageID
	if got := collect(t, invoke(t, f.inv, req)); len(got) != 0 {
		t.Fatalf("one-way got replies %v", got)
	}
	// the action ran: its status can be queried
	deadline := time.Now().Add(5 * time.Second)
	for {
		q := request(proto.MsgQueryAction, "count")
		q.CorrelationID = req.CorrelationID
		got := collect(t, invoke(t, f.inv, q))
		if len(got) != 1 {
			t.Fatalf("queryAction got %d replies", len(got))
		}
		if got[0].Type == proto.MsgActionStatus && got[0].Status == proto.ActionCompleted {
			if got[0].Output.String() != "3" || got[0].CorrelationID != req.CorrelationID {
				t.Fatalf("query: %+v", got[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("one-way action not completed: %+v", got[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// a one-way request that fails is silent too
	bad := request(proto.MsgInvokeAction, "nosuch")
	bad.OneWay = true
	if got := collect(t, invoke(t, f.inv, bad)); len(got) != 0 {
		t.Fatalf("failing one-way got replies %v", got)
	}
}

func testRequestReply(t *testing.T, f *fixture) {
	read := request(proto.MsgReadProperty, "temperature")
	got := collect(t, invoke(t, f.inv, read))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading || got[0].Value.String() != "21.5" {
		t.Fatalf("readProperty: %+v", got)
	}
	if got[0].CorrelationID != read.MessageID || got[0].Name != "temperature" || got[0].Timestamp == "" {
		t.Fatalf("reading not tied to the request: %+v", got[0])
	}
	if err := got[0].Validate(); err != nil {
		t.Fatal(err)
	}

	write := request(proto.MsgWriteProperty, "config")
	write.Data = mustValue(t, map[string]string{"unit": "F"})
	got = collect(t, invoke(t, f.inv, write))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReading || got[0].Value.String() != `{"unit":"F"}` {
		t.Fatalf("writeProperty: %+v", got)
	}
	got = collect(t, invoke(t, f.inv, request(proto.MsgReadProperty, "config")))
	if len(got) != 1 || got[0].Value.String() != `{"unit":"F"}` {
		t.Fatalf("read after write: %+v", got)
	}

	multi := proto.NewMessage(testThingID, proto.MsgWriteMultipleProperties)
	multi.Data = mustValue(t, map[string]any{"config": map[string]string{"unit": "C"}})
	got = collect(t, invoke(t, f.inv, multi))
	if len(got) != 1 || got[0].Type != proto.MsgPropertyReadings || got[0].Data.String() != `{"config":{"unit":"C"}}` {
		t.Fatalf("writeMultipleProperties: %+v", got)
	}

	inv := request(proto.MsgInvokeAction, "getWeather")
	inv.Input = mustValue(t, map[string]string{"city": "Berlin"})
	got = collect(t, invoke(t, f.inv, inv))
	if len(got) != 1 || got[0].Type != proto.MsgActionStatus || got[0].Status != proto.ActionCompleted || got[0].Output.String() != `"Sunny in Berlin"` {
		t.Fatalf("invokeAction: %+v", got)
	}
	if got[0].Name != "getWeather" || got[0].CorrelationID != inv.MessageID || got[0].Stream {
		t.Fatalf("actionStatus: %+v", got[0])
	}
}

// startBlock invokes "block" and waits for its running status.
func startBlock(t *testing.T, f *fixture) Session {
	t.Helper()
	req := request(proto.MsgInvokeAction, "block")
	req.CorrelationID = proto.NewMessage("", "").MessageID
	s := invoke(t, f.inv, req)
	m := next(t, s)
	if m.Status == proto.ActionPending { // an HTTP backend's accepted long-running action
		m = next(t, s)
	}
	if m.Type != proto.MsgActionStatus || m.Status != proto.ActionRunning {
		t.Fatalf("block: first reply %+v", m)
	}
	<-f.state.blocked
	return s
}

func testQueryAndCancel(t *testing.T, f *fixture) {
	s := startBlock(t, f)
	defer s.Close()
	q := request(proto.MsgQueryAction, "block")
	q.CorrelationID = s.Request().CorrelationID
	got := collect(t, invoke(t, f.inv, q))
	if len(got) != 1 || got[0].Status != proto.ActionRunning {
		t.Fatalf("queryAction: %+v", got)
	}
	c := request(proto.MsgCancelAction, "block")
	c.CorrelationID = s.Request().CorrelationID
	c.Reason = "changed my mind"
	got = collect(t, invoke(t, f.inv, c))
	if len(got) != 1 || got[0].Type != proto.MsgActionStatus || got[0].Status != proto.ActionCancelled {
		t.Fatalf("cancelAction: %+v", got)
	}
	rest := collect(t, s)
	if len(rest) != 1 || rest[0].Status != proto.ActionCancelled {
		t.Fatalf("invocation after cancel: %+v", rest)
	}
	// unknown invocation
	q.CorrelationID = proto.NewMessage("", "").MessageID
	got = collect(t, invoke(t, f.inv, q))
	wantError(t, got[0], "404", q.CorrelationID)
}

func testCancelInSession(t *testing.T, f *fixture) {
	s := startBlock(t, f)
	defer s.Close()
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgQueryAction}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, s); m.Status != proto.ActionRunning {
		t.Fatalf("in-session query: %+v", m)
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgCancelAction}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != 1 || got[0].Status != proto.ActionCancelled {
		t.Fatalf("after in-session cancel: %+v", got)
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgCancelAction}); err == nil {
		t.Fatal("Send after the end succeeded")
	}
}

func testCloseCancels(t *testing.T, f *fixture) {
	s := startBlock(t, f)
	id := s.Request().CorrelationID
	s.Close()
	collect(t, s)
	// the action was cancelled: queryAction says so
	deadline := time.Now().Add(5 * time.Second)
	for {
		q := request(proto.MsgQueryAction, "block")
		q.CorrelationID = id
		got := collect(t, invoke(t, f.inv, q))
		if len(got) == 1 && got[0].Status == proto.ActionCancelled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testProgress(t *testing.T, f *fixture) {
	const n = 50
	req := request(proto.MsgInvokeAction, "count")
	req.Input = mustValue(t, n)
	got := dropPending(collect(t, invoke(t, f.inv, req)))
	if len(got) != n+1 {
		t.Fatalf("count %d: %d replies", n, len(got))
	}
	for i, m := range got[:n] {
		if m.Status != proto.ActionRunning || m.Output.String() != mustValue(t, i+1).String() {
			t.Fatalf("reply %d: %s %s", i, m.Status, m.Output)
		}
	}
	if last := got[n]; last.Status != proto.ActionCompleted || last.Output.String() != "50" {
		t.Fatalf("final: %+v", last)
	}
}

// waitFeed repeats send until it reaches a feed (the subscription has
// reached the backend) and returns the first message of s.
func waitFeed(t *testing.T, s Session, send func() int) *proto.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if send() > 0 {
			return next(t, s)
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription never reached the backend")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testObserve(t *testing.T, f *fixture) {
	obs := request(proto.MsgObserveProperty, "config")
	s := invoke(t, f.inv, obs)
	defer s.Close()
	m := waitFeed(t, s, func() int { return f.change("config", mustValue(t, map[string]string{"unit": "F"})) })
	if m.Type != proto.MsgPropertyReading || m.Value.String() != `{"unit":"F"}` || m.CorrelationID != obs.MessageID {
		t.Fatalf("observation: %+v", m)
	}
	f.change("config", mustValue(t, map[string]string{"unit": "C"}))
	if m := next(t, s); m.Value.String() != `{"unit":"C"}` {
		t.Fatalf("second observation: %+v", m)
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgUnobserveProperty}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s); len(got) != 0 {
		t.Fatalf("after unobserve: %+v", got)
	}
	// not observable
	got := collect(t, invoke(t, f.inv, request(proto.MsgObserveProperty, "secret")))
	wantError(t, got[0], "405", "not observable")
}

func testEvents(t *testing.T, f *fixture) {
	sub := request(proto.MsgSubscribeEvent, "alert")
	s := invoke(t, f.inv, sub)
	defer s.Close()
	sub2 := request(proto.MsgSubscribeEvent, "alert")
	s2 := invoke(t, f.inv, sub2)
	defer s2.Close()
	m := waitFeed(t, s, func() int { return f.emit("alert", proto.StringValue("storm")) })
	if m.Type != proto.MsgEvent || m.Name != "alert" || m.Data.String() != `"storm"` || m.CorrelationID != sub.MessageID || m.Timestamp == "" {
		t.Fatalf("event: %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	// The second subscriber may reach the owner after "storm" (over
	// libp2p its stream can arrive later): emit "probe" until it has an
	// event, so that both are attached; then one "hail" reaches both.
	deadline := time.Now().Add(10 * time.Second)
	for attached := false; !attached; {
		f.emit("alert", proto.StringValue("probe"))
		select {
		case m, ok := <-s2.Replies():
			if !ok {
				t.Fatal("second subscription closed early")
			}
			if m.CorrelationID != sub2.MessageID {
				t.Fatalf("second subscriber got %+v", m)
			}
			attached = true
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the second subscription never reached the backend")
			}
		}
	}
	f.emit("alert", proto.StringValue("hail"))
	for _, sess := range []Session{s, s2} {
		for {
			m := next(t, sess)
			if m.CorrelationID != sess.Request().MessageID {
				t.Fatalf("subscriber %s got %+v", sess.Request().MessageID, m)
			}
			if m.Data.String() == `"hail"` {
				break
			}
			if m.Data.String() != `"probe"` && m.Data.String() != `"storm"` {
				t.Fatalf("unexpected event before hail: %+v", m)
			}
		}
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgUnsubscribeEvent}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s); len(got) != 0 {
		t.Fatalf("after unsubscribe: %+v", got)
	}
	// standalone unsubscribe by correlationID
	un := request(proto.MsgUnsubscribeEvent, "alert")
	un.CorrelationID = sub2.MessageID
	collect(t, invoke(t, f.inv, un))
	if got := collect(t, s2); len(got) != 0 {
		t.Fatalf("after standalone unsubscribe: %+v", got)
	}
	got := collect(t, invoke(t, f.inv, request(proto.MsgSubscribeEvent, "nosuch")))
	wantError(t, got[0], "404", "nosuch")
}

func testAllEvents(t *testing.T, f *fixture) {
	sub := proto.NewMessage(testThingID, proto.MsgSubscribeAllEvents)
	s := invoke(t, f.inv, sub)
	defer s.Close()
	if m := waitFeed(t, s, func() int { return f.emit("alert", proto.StringValue("x")) }); m.Name != "alert" {
		t.Fatalf("first event: %+v", m)
	}
	if m := waitFeed(t, s, func() int { return f.emit("tick", mustValue(t, 7)) }); m.Name != "tick" || m.Data.String() != "7" || m.CorrelationID != sub.MessageID {
		t.Fatalf("second event: %+v", m)
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgUnsubscribeAllEvents}); err != nil {
		t.Fatal(err)
	}
	collect(t, s)
}

func testStream(t *testing.T, f *fixture) {
	req := request(proto.MsgInvokeAction, "chat")
	req.Stream = true
	req.Input = proto.StringValue("hello")
	s := invoke(t, f.inv, req)
	defer s.Close()
	accept := next(t, s)
	if accept.Type != proto.MsgActionStatus || !accept.Stream || accept.Status != proto.ActionRunning || accept.Output.Present() {
		t.Fatalf("accept: %+v", accept)
	}
	if m := next(t, s); m.Output.String() != `"HELLO"` || !m.Stream {
		t.Fatalf("first chunk: %+v", m)
	}
	ctx := context.Background()
	for _, w := range []string{"how", "are", "you"} {
		if err := s.Send(ctx, &proto.Message{Type: proto.MsgStreamInput, Input: proto.StringValue(w)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{"HOW", "ARE", "YOU"} {
		if m := next(t, s); m.Output.String() != `"`+w+`"` || m.Status != proto.ActionRunning {
			t.Fatalf("chunk: %+v, want %s", m, w)
		}
	}
	if err := s.Send(ctx, &proto.Message{Type: proto.MsgStreamEnd}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != 1 || got[0].Status != proto.ActionCompleted || !got[0].Stream {
		t.Fatalf("end of session: %+v", got)
	}
	// the same action invoked without streaming runs as an ordinary invocation
	req = request(proto.MsgInvokeAction, "chat")
	req.Input = proto.StringValue("once")
	got = collect(t, invoke(t, f.inv, req))
	last := got[len(got)-1]
	if last.Status != proto.ActionCompleted || last.Stream {
		t.Fatalf("chat without stream: %+v", last)
	}
	// the Go SDK reports the chunk as running, the HTTP service as output
	if got[0].Output.String() != `"ONCE"` {
		t.Fatalf("chat without stream: %+v", got[0])
	}
}

func testStreamInvalidChunk(t *testing.T, f *fixture) {
	req := request(proto.MsgInvokeAction, "chat")
	req.Stream = true
	s := invoke(t, f.inv, req)
	defer s.Close()
	if m := next(t, s); !m.Stream {
		t.Fatalf("accept: %+v", m)
	}
	if err := s.Send(context.Background(), &proto.Message{Type: proto.MsgStreamInput, Input: mustValue(t, 42)}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != 1 {
		t.Fatalf("after invalid chunk: %+v", got)
	}
	wantError(t, got[0], "400", "want string")
}

func testErrors(t *testing.T, f *fixture) {
	cases := []struct {
		name   string
		req    func() *proto.Message
		status string
		detail string
	}{
		{"unknown thing", func() *proto.Message {
			m := request(proto.MsgReadProperty, "temperature")
			m.ThingID = "urn:uuid:00000000-0000-4000-8000-000000000000"
			return m
		}, "404", "urn:uuid:00000000"},
		{"unknown property", func() *proto.Message { return request(proto.MsgReadProperty, "humidity") }, "404", `"humidity"`},
		{"unknown action", func() *proto.Message { return request(proto.MsgInvokeAction, "fly") }, "404", `"fly"`},
		{"input mismatch", func() *proto.Message {
			m := request(proto.MsgInvokeAction, "getWeather")
			m.Input = mustValue(t, map[string]any{"city": 7})
			return m
		}, "400", `at "/city"`},
		{"input missing member", func() *proto.Message {
			m := request(proto.MsgInvokeAction, "getWeather")
			m.Input = mustValue(t, map[string]any{})
			return m
		}, "400", "city"},
		{"write mismatch", func() *proto.Message {
			m := request(proto.MsgWriteProperty, "config")
			m.Data = mustValue(t, map[string]any{"unit": "K"})
			return m
		}, "400", `at "/unit"`},
		{"write read-only", func() *proto.Message {
			m := request(proto.MsgWriteProperty, "temperature")
			m.Data = mustValue(t, 3)
			return m
		}, "405", "readOnly"},
		{"read write-only", func() *proto.Message { return request(proto.MsgReadProperty, "secret") }, "405", "writeOnly"},
		{"backend failure", func() *proto.Message { return request(proto.MsgReadProperty, "broken") }, "500", "sensor unplugged"},
		{"backend panic", func() *proto.Message { return request(proto.MsgInvokeAction, "crash") }, "500", ""},
		{"not a request", func() *proto.Message {
			m := request(proto.MsgActionStatus, "getWeather")
			m.Status = proto.ActionCompleted
			return m
		}, "400", "not a request"},
		{"invalid envelope", func() *proto.Message { return request(proto.MsgReadProperty, "") }, "400", `"name"`},
		{"query without correlation", func() *proto.Message { return request(proto.MsgQueryAction, "block") }, "400", "correlationID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req()
			got := collect(t, invoke(t, f.inv, req))
			if len(got) != 1 {
				t.Fatalf("got %d replies: %+v", len(got), got)
			}
			wantError(t, got[0], c.status, c.detail)
			if got[0].CorrelationID != req.Correlation() || got[0].ThingID != req.ThingID {
				t.Fatalf("error not tied to the request: %+v", got[0])
			}
		})
	}
}

func testTimeout(t *testing.T, f *fixture) {
	req := request(proto.MsgInvokeAction, "block")
	got := dropPending(collect(t, invoke(t, f.inv, req)))
	if len(got) != 2 {
		t.Fatalf("block with timeout: %+v", got)
	}
	<-f.state.blocked
	wantError(t, got[1], "504", "within")
}

// dropPending drops a leading actionStatus pending (an HTTP backend's
// accepted long-running action).
func dropPending(ms []*proto.Message) []*proto.Message {
	if len(ms) > 0 && ms[0].Type == proto.MsgActionStatus && ms[0].Status == proto.ActionPending {
		return ms[1:]
	}
	return ms
}
