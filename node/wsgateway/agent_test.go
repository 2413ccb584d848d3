package wsgateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// engineRegistrar is the Registrar a node implements, reduced to what the
// tests need: the TD goes into the engine's Things, the backend into the
// engine.
type engineRegistrar struct {
	things *tdSet
	engine *interact.Engine
}

func (r *engineRegistrar) Register(ctx context.Context, td *proto.TD, b interact.Backend) error {
	if !strings.HasPrefix(interact.CallerFrom(ctx), "ws:") {
		return &proto.Problem{Status: http.StatusUnauthorized, Title: "Unauthorized", Detail: "no caller"}
	}
	if !strings.HasPrefix(td.ID, "urn:") {
		return &proto.Problem{Status: http.StatusForbidden, Title: "Forbidden", Detail: "test registrar takes urn ids only"}
	}
	r.things.put(td)
	r.engine.SetBackend(td.ID, b)
	return nil
}

func (r *engineRegistrar) Unregister(_ context.Context, id string) error {
	r.engine.SetBackend(id, nil)
	r.things.del(id)
	return nil
}

// agentEnv is one node: an Engine, the consumer Gateway at /ws and the
// AgentGateway at /ws/agent, with no Things until an agent registers.
type agentEnv struct {
	engine   *interact.Engine
	consumer string
	agent    string
	agentGW  *AgentGateway
}

func newAgentEnv(t *testing.T) *agentEnv {
	t.Helper()
	return newAgentEnvOpts(t, Config{})
}

func newAgentEnvOpts(t *testing.T, cfg Config) *agentEnv {
	t.Helper()
	things := &tdSet{}
	e, err := interact.NewEngine(interact.EngineDeps{Things: things}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := NewGateway(GatewayDeps{Invoker: e}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	agw, err := NewAgentGateway(AgentDeps{Registrar: &engineRegistrar{things: things, engine: e}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ws", gw)
	mux.Handle("/ws/agent", agw)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = gw.Close()
		_ = agw.Close()
		srv.Close()
		_ = e.Close()
	})
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	return &agentEnv{engine: e, consumer: base + "/ws", agent: base + "/ws/agent", agentGW: agw}
}

// register sends registerThing with the test TD and waits for the ack.
func register(t *testing.T, a *client) {
	t.Helper()
	msg := `{"messageType":"registerThing","messageID":"11111111-1111-4111-8111-111111111111","data":` + testTDJSON + `}`
	a.sendRaw([]byte(msg))
	ack := a.recvRaw()
	if ack["messageType"] != MsgThingRegistered || ack["thingID"] != testThingID || ack["correlationID"] != "11111111-1111-4111-8111-111111111111" {
		t.Fatalf("registration answered %v", ack)
	}
}

// reply sends the agent's answer to req.
func (c *client) reply(req *proto.Message, typ proto.MessageType, set func(*proto.Message)) {
	c.t.Helper()
	m := req.Reply(typ)
	set(m)
	c.send(m)
}

func TestAgentRoundTrip(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)

	req := invoke(t, "getWeather", map[string]string{"city": "Paris"})
	consumer.send(req)
	got := agent.recv()
	if got.Type != proto.MsgInvokeAction || got.Name != "getWeather" || got.CorrelationID != req.MessageID || got.Input.String() != `{"city":"Paris"}` {
		t.Fatalf("agent got %+v", got)
	}
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status = proto.ActionPending })
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) {
		m.Status, m.Output = proto.ActionCompleted, proto.StringValue("Rainy in Paris")
	})
	for _, want := range []string{proto.ActionPending, proto.ActionCompleted} {
		m := consumer.recv()
		if m.Type != proto.MsgActionStatus || m.Status != want || m.CorrelationID != req.MessageID || m.ThingID != testThingID {
			t.Fatalf("consumer got %+v, want %s", m, want)
		}
		if want == proto.ActionCompleted && m.Output.String() != `"Rainy in Paris"` {
			t.Fatalf("output %s", m.Output)
		}
	}

	// a property read, answered with an error by the agent
	read := proto.NewMessage(testThingID, proto.MsgReadProperty)
	read.Name = "temperature"
	consumer.send(read)
	got = agent.recv()
	if got.Type != proto.MsgReadProperty || got.Name != "temperature" {
		t.Fatalf("agent got %+v", got)
	}
	agent.send(proto.NewError(got, http.StatusServiceUnavailable, "Sensor offline", "the thermometer is unplugged"))
	m := consumer.recv()
	wantError(t, m, "503")
	if m.Title != "Sensor offline" || m.CorrelationID != read.MessageID {
		t.Fatalf("consumer got %+v", m)
	}

	// an event subscription fed by the agent
	sub := proto.NewMessage(testThingID, proto.MsgSubscribeEvent)
	sub.Name = "alert"
	consumer.send(sub)
	feed := agent.recv()
	if feed.Type != proto.MsgSubscribeEvent || feed.Name != "alert" {
		t.Fatalf("agent got %+v", feed)
	}
	agent.reply(feed, proto.MsgEvent, func(m *proto.Message) { m.Data = proto.StringValue("storm") })
	if m := consumer.recv(); m.Type != proto.MsgEvent || m.CorrelationID != sub.MessageID || m.Data.String() != `"storm"` {
		t.Fatalf("consumer got %+v", m)
	}
	unsub := proto.NewMessage(testThingID, proto.MsgUnsubscribeEvent)
	unsub.Name, unsub.CorrelationID = "alert", sub.MessageID
	consumer.send(unsub)
	if m := agent.recv(); m.Type != proto.MsgUnsubscribeEvent || m.CorrelationID != feed.CorrelationID {
		t.Fatalf("agent got %+v, want unsubscribeEvent", m)
	}
}

func TestAgentStreamingAndCancel(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)

	req := invoke(t, "chat", "hi")
	req.Stream = true
	consumer.send(req)
	got := agent.recv()
	if !got.Stream || got.Type != proto.MsgInvokeAction {
		t.Fatalf("agent got %+v", got)
	}
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status, m.Stream = proto.ActionRunning, true })
	if m := consumer.recv(); !m.Stream || m.Status != proto.ActionRunning {
		t.Fatalf("consumer got %+v", m)
	}
	in := proto.NewMessage(testThingID, proto.MsgStreamInput)
	in.Name, in.CorrelationID, in.Input = "chat", req.MessageID, proto.StringValue("there")
	consumer.send(in)
	if m := agent.recv(); m.Type != proto.MsgStreamInput || m.Input.String() != `"there"` || m.CorrelationID != got.CorrelationID {
		t.Fatalf("agent got %+v", m)
	}
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status, m.Output = proto.ActionRunning, proto.StringValue("THERE") })
	if m := consumer.recv(); m.Output.String() != `"THERE"` {
		t.Fatalf("consumer got %+v", m)
	}
	end := proto.NewMessage(testThingID, proto.MsgStreamEnd)
	end.Name, end.CorrelationID = "chat", req.MessageID
	consumer.send(end)
	if m := agent.recv(); m.Type != proto.MsgStreamEnd {
		t.Fatalf("agent got %+v", m)
	}
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status = proto.ActionCompleted })
	if m := consumer.recv(); m.Status != proto.ActionCompleted || m.CorrelationID != req.MessageID {
		t.Fatalf("consumer got %+v", m)
	}

	// cancelAction reaches the agent
	long := invoke(t, "block", nil)
	consumer.send(long)
	got = agent.recv()
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status = proto.ActionRunning })
	if m := consumer.recv(); m.Status != proto.ActionRunning {
		t.Fatalf("consumer got %+v", m)
	}
	cancelMsg := proto.NewMessage(testThingID, proto.MsgCancelAction)
	cancelMsg.Name, cancelMsg.CorrelationID = "block", long.MessageID
	consumer.send(cancelMsg)
	if m := agent.recv(); m.Type != proto.MsgCancelAction || m.CorrelationID != got.CorrelationID {
		t.Fatalf("agent got %+v, want cancelAction", m)
	}
	if m := consumer.recv(); m.Status != proto.ActionCancelled {
		t.Fatalf("consumer got %+v", m)
	}
}

func TestAgentDisconnect(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)

	req := invoke(t, "block", nil)
	consumer.send(req)
	agent.recv()
	_ = agent.ws.Close(websocket.StatusNormalClosure, "bye")
	m := consumer.recv()
	wantError(t, m, "502")
	if !strings.Contains(m.Detail, testThingID) || m.CorrelationID != req.MessageID {
		t.Fatalf("consumer got %+v", m)
	}
	req = invoke(t, "getWeather", map[string]string{"city": "X"})
	consumer.send(req)
	wantError(t, consumer.recv(), "503")

	// the agent comes back and registers again
	agent = dial(t, env.agent)
	register(t, agent)
	req = invoke(t, "getWeather", map[string]string{"city": "Y"})
	consumer.send(req)
	got := agent.recv()
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Status = proto.ActionCompleted })
	if m := consumer.recv(); m.Status != proto.ActionCompleted {
		t.Fatalf("consumer got %+v", m)
	}
}

func TestAgentRegistrationErrors(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	for name, tc := range map[string]struct {
		msg, status string
	}{
		"no TD":         {`{"messageType":"registerThing","messageID":"m1"}`, "400"},
		"TD not object": {`{"messageType":"registerThing","messageID":"m1","data":[1]}`, "400"},
		"TD without id": {`{"messageType":"registerThing","messageID":"m1","data":{"title":"x"}}`, "400"},
		"id mismatch":   {`{"messageType":"registerThing","messageID":"m1","thingID":"urn:other","data":` + testTDJSON + `}`, "400"},
		"refused":       {`{"messageType":"registerThing","messageID":"m1","data":{"id":"https://x","title":"x"}}`, "403"},
		"unregister":    {`{"messageType":"unregisterThing","messageID":"m1","thingID":"urn:nope"}`, "404"},
		"request":       {`{"messageType":"readProperty","messageID":"m1","thingID":"urn:x","name":"p"}`, "400"},
	} {
		t.Run(name, func(t *testing.T) {
			agent.sendRaw([]byte(tc.msg))
			m := agent.recv()
			wantError(t, m, tc.status)
			if m.CorrelationID != "m1" {
				t.Fatalf("got %+v", m)
			}
		})
	}

	// unregister withdraws the Thing
	register(t, agent)
	agent.sendRaw([]byte(`{"messageType":"unregisterThing","messageID":"m2","thingID":"` + testThingID + `"}`))
	ack := agent.recvRaw()
	if ack["messageType"] != MsgThingUnregistered || ack["correlationID"] != "m2" {
		t.Fatalf("got %v", ack)
	}
	consumer := dial(t, env.consumer)
	consumer.send(invoke(t, "getWeather", map[string]string{"city": "X"}))
	wantError(t, consumer.recv(), "404")
}

func TestAgentManyConcurrent(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)
	const n = 120
	want := map[string]string{}
	for i := range n {
		req := invoke(t, "getWeather", map[string]string{"city": fmt.Sprint(i)})
		want[req.MessageID] = fmt.Sprint(i)
		consumer.send(req)
	}
	// the agent collects every request, then answers in reverse order
	reqs := make([]*proto.Message, 0, n)
	for range n {
		reqs = append(reqs, agent.recv())
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		var in struct{ City string }
		if err := r.Input.Decode(&in); err != nil {
			t.Fatal(err)
		}
		agent.reply(r, proto.MsgActionStatus, func(m *proto.Message) {
			m.Status, m.Output = proto.ActionCompleted, proto.StringValue(in.City)
		})
	}
	for range n {
		m := consumer.recv()
		city, ok := want[m.CorrelationID]
		if !ok || m.Output.String() != `"`+city+`"` {
			t.Fatalf("consumer got %+v", m)
		}
		delete(want, m.CorrelationID)
	}
}

func TestAgentWrongReply(t *testing.T) {
	env := newAgentEnv(t)
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)
	read := proto.NewMessage(testThingID, proto.MsgReadProperty)
	read.Name = "temperature"
	consumer.send(read)
	got := agent.recv()
	agent.reply(got, proto.MsgActionStatus, func(m *proto.Message) { m.Name, m.Status = "temperature", proto.ActionCompleted })
	m := consumer.recv()
	wantError(t, m, "502")
	if !strings.Contains(m.Detail, testThingID) || m.CorrelationID != read.MessageID {
		t.Fatalf("consumer got %+v", m)
	}
}

// An agent whose connection vanished without a close (it answers no
// pings) is noticed; its Things answer 502, then 503.
func TestAgentVanishes(t *testing.T) {
	env := newAgentEnvOpts(t, Config{PingInterval: 50 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	agent := dial(t, env.agent)
	register(t, agent)
	consumer := dial(t, env.consumer)
	// from now on the agent reads nothing, so it answers no pings
	req := invoke(t, "getWeather", map[string]string{"city": "X"})
	consumer.send(req)
	m := consumer.recv()
	wantError(t, m, "502")
	if m.CorrelationID != req.MessageID {
		t.Fatalf("consumer got %+v", m)
	}
	consumer.send(invoke(t, "getWeather", map[string]string{"city": "Y"}))
	wantError(t, consumer.recv(), "503")
}
