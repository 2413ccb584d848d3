package mqttgw

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

const testThingID = "urn:example:mqtt/thing+1" // '/' and '+' need escaping

const testTD = `{
  "@context": "https://www.w3.org/2022/wot/td/v1.1",
  "id": "urn:example:mqtt/thing+1",
  "title": "MQTT test thing",
  "securityDefinitions": {"nosec": {"scheme": "nosec"}}, "security": "nosec",
  "properties": {"level": {"type": "integer", "observable": true, "forms": [{"href": "level"}]}},
  "actions": {
    "echo": {"input": {"type": "string"}, "forms": [{"href": "echo"}]},
    "long": {"forms": [{"href": "long"}]},
    "block": {"forms": [{"href": "block"}]},
    "upper": {"input": {"type": "string"}, "forms": [{"href": "upper"}]}
  },
  "events": {"tick": {"data": {"type": "integer"}, "forms": [{"href": "tick"}]}}
}`

// fixture is a Go SDK Thing in an Engine, exposed by a started gateway.
type fixture struct {
	url     string
	thing   *interact.Thing
	engine  *interact.Engine
	gw      *Gateway
	topics  topics
	release chan struct{} // ends the "block" action

	mu  sync.Mutex
	tds []*proto.TD // what the gateway's ThingLister returns
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureAt(t, testBroker(t), nil)
}

// newFixtureAt is newFixture with a broker and a change to the gateway's
// Config.
func newFixtureAt(t *testing.T, broker string, mod func(*Config)) *fixture {
	t.Helper()
	release := make(chan struct{})
	td, err := proto.ParseTD([]byte(testTD))
	if err != nil {
		t.Fatal(err)
	}
	level, _ := proto.ValueOf(1)
	thing := interact.NewThing().
		OnProperty("level",
			func(context.Context) (proto.Value, error) { return level, nil },
			func(_ context.Context, v proto.Value) error { level = v; return nil }).
		OnAction("echo", func(_ context.Context, in proto.Value, _ func(proto.Value)) (proto.Value, error) {
			return in, nil
		}).
		OnAction("long", func(ctx context.Context, _ proto.Value, progress func(proto.Value)) (proto.Value, error) {
			for i := range 3 {
				v, _ := proto.ValueOf(i)
				progress(v)
				select {
				case <-ctx.Done():
					return proto.Value{}, ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			return proto.StringValue("done"), nil
		}).
		OnAction("block", func(ctx context.Context, _ proto.Value, _ func(proto.Value)) (proto.Value, error) {
			select {
			case <-release:
				return proto.Value{}, nil
			case <-ctx.Done():
				return proto.Value{}, ctx.Err()
			}
		}).
		OnStream("upper", func(_ context.Context, in <-chan proto.Value, out func(proto.Value) error) error {
			for v := range in {
				var s string
				if err := v.Decode(&s); err != nil {
					return err
				}
				if err := out(proto.StringValue(strings.ToUpper(s))); err != nil {
					return err
				}
			}
			return nil
		})
	engine, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*proto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	engine.SetBackend(td.ID, thing)
	// A prefix of its own keeps the test's retained values apart from other
	// tests' on a shared broker (LMOS_TEST_MQTT_URL).
	prefix := "test-" + proto.NewMessage("", "").MessageID
	f := &fixture{url: broker, thing: thing, engine: engine, topics: newTopics(prefix), release: release, tds: []*proto.TD{td}}
	cfg := Config{BrokerURL: f.url, Prefix: prefix, ResubscribeDelay: 50 * time.Millisecond,
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	f.gw, err = New(Deps{Invoker: engine, Things: ThingListerFunc(f.exposedThings)}, cfg, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.gw.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		_ = engine.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.gw.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	f.awaitServing(t)
	return f
}

func (f *fixture) exposedThings() []*proto.TD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tds
}

func (f *fixture) setThings(tds ...*proto.TD) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tds = tds
}

// awaitServing waits until the gateway has subscribed to the Thing's
// request topics: it reads a property until an answer comes.
func (f *fixture) awaitServing(t *testing.T) {
	t.Helper()
	c := newClient(t, f.url)
	defer c.close()
	resp := "test/probe/" + proto.NewMessage("", "").MessageID
	c.subscribe(resp)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.publish(&paho.Publish{Topic: f.topics.thing(testThingID) + "/properties/level/read",
			Properties: &paho.PublishProperties{ResponseTopic: resp}})
		select {
		case <-c.got:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("gateway does not serve requests within 5 s")
		}
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// client is a consumer's MQTT v5 client.
type client struct {
	t   *testing.T
	cm  *autopaho.ConnectionManager
	got chan *paho.Publish
}

func newClient(t *testing.T, broker string) *client {
	t.Helper()
	u, _ := url.Parse(broker)
	c := &client{t: t, got: make(chan *paho.Publish, 100)}
	cm, err := autopaho.NewConnection(context.Background(), autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     30,
		CleanStartOnInitialConnection: true,
		ClientConfig: paho.ClientConfig{
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				c.got <- pr.Packet
				return true, nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.cm = cm
	t.Cleanup(c.close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *client) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.cm.Disconnect(ctx)
}

func (c *client) subscribe(topic string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		c.t.Fatalf("subscribe %q: %v", topic, err)
	}
}

func (c *client) publish(p *paho.Publish) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.QoS = 1
	if _, err := c.cm.Publish(ctx, p); err != nil {
		c.t.Fatalf("publish %q: %v", p.Topic, err)
	}
}

// next returns the next message received, decoded.
func (c *client) next() (*paho.Publish, *proto.Message) {
	c.t.Helper()
	select {
	case p := <-c.got:
		var m proto.Message
		if err := proto.JSON.Unmarshal(p.Payload, &m); err != nil {
			c.t.Fatalf("message on %q: %v: %s", p.Topic, err, p.Payload)
		}
		return p, &m
	case <-time.After(5 * time.Second):
		c.t.Fatal("no message within 5 s")
		return nil, nil
	}
}

// request publishes a v5 request and returns its replies up to the
// terminal one, checking the correlation data of each.
func (c *client) request(topic string, payload []byte) []*proto.Message {
	c.t.Helper()
	resp := "test/replies/" + proto.NewMessage("", "").MessageID
	c.subscribe(resp)
	corr := []byte(proto.NewMessage("", "").MessageID)
	c.publish(&paho.Publish{Topic: topic, Payload: payload, Properties: &paho.PublishProperties{ResponseTopic: resp, CorrelationData: corr}})
	var out []*proto.Message
	for {
		p, m := c.next()
		if p.Topic != resp {
			c.t.Fatalf("reply on %q, want %q", p.Topic, resp)
		}
		if p.Properties == nil || !bytes.Equal(p.Properties.CorrelationData, corr) {
			c.t.Fatalf("reply without the correlation data: %+v", p.Properties)
		}
		out = append(out, m)
		if m.Type == proto.MsgError || m.Type == proto.MsgPropertyReading || m.EndsAction() {
			return out
		}
	}
}

func TestEventsPublished(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	topic := f.topics.event(testThingID, "tick")
	if !strings.HasSuffix(topic, "/urn:example:mqtt%2Fthing%2B1/events/tick") {
		t.Fatalf("event topic %q", topic)
	}
	c.subscribe(topic)
	waitFor(t, func() bool { return f.thing.Emit("tick", mustValue(t, 7)) > 0 })
	p, m := c.next()
	if p.Topic != topic || m.Type != proto.MsgEvent || m.Name != "tick" || m.ThingID != testThingID || m.Data.String() != "7" {
		t.Fatalf("got %q %+v", p.Topic, m)
	}
}

func TestObservedPropertyRetained(t *testing.T) {
	f := newFixture(t)
	topic := f.topics.property(testThingID, "level")
	// A first client sees the change published. The gateway publishes the
	// reading it took when it opened the observation (1) before any
	// change, so once the change has reached this client, the broker
	// retains it.
	seen := newClient(t, f.url)
	seen.subscribe(topic)
	waitFor(t, func() bool { return f.thing.Changed("level", mustValue(t, 5)) > 0 })
	for {
		_, m := seen.next()
		if m.Type != proto.MsgPropertyReading {
			t.Fatalf("on %q: %+v", topic, m)
		}
		if m.Value.String() == "5" {
			break
		}
	}
	// A client that subscribes later gets the retained value at once.
	c := newClient(t, f.url)
	c.subscribe(topic)
	p, m := c.next()
	if !p.Retain || m.Type != proto.MsgPropertyReading || m.Value.String() != "5" {
		t.Fatalf("retained (flag %v): %+v", p.Retain, m)
	}
}

func TestActionRequestReply(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	replies := c.request(testThingID2Topic(f, "actions/echo"), []byte(`"hello"`))
	last := replies[len(replies)-1]
	if last.Type != proto.MsgActionStatus || last.Status != proto.ActionCompleted || last.Output.String() != `"hello"` {
		t.Fatalf("replies: %+v", replies)
	}
}

func TestActionEnvelopeV3Style(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	resp := "test/v3/replies"
	c.subscribe(resp)
	req := proto.NewMessage(testThingID, proto.MsgInvokeAction)
	req.Name, req.Input = "echo", proto.StringValue("env")
	req.CorrelationID = proto.NewMessage("", "").MessageID
	req.Extensions = map[string]proto.Value{memberResponseTopic: proto.StringValue(resp)}
	payload, err := proto.JSON.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	c.publish(&paho.Publish{Topic: testThingID2Topic(f, "actions/echo"), Payload: payload})
	for {
		_, m := c.next()
		if m.CorrelationID != req.CorrelationID {
			t.Fatalf("correlationID %q, want %q", m.CorrelationID, req.CorrelationID)
		}
		if m.EndsAction() {
			if m.Status != proto.ActionCompleted || m.Output.String() != `"env"` {
				t.Fatalf("final %+v", m)
			}
			return
		}
	}
}

func TestLongRunningAction(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	replies := c.request(testThingID2Topic(f, "actions/long"), nil)
	var running int
	for _, m := range replies {
		if m.Type == proto.MsgActionStatus && m.Status == proto.ActionRunning {
			running++
		}
	}
	last := replies[len(replies)-1]
	if running != 3 || last.Status != proto.ActionCompleted || last.Output.String() != `"done"` {
		for _, m := range replies {
			t.Logf("%s %s %s", m.Type, m.Status, m.Output)
		}
		t.Fatalf("want 3 running and completed")
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	for _, tc := range []struct {
		name, topic string
		payload     string
		status      string
	}{
		{"invalid input", "actions/echo", `42`, "400"},
		{"unknown action", "actions/nope", `"x"`, "404"},
		{"not JSON", "actions/echo", `{nope`, "400"},
		{"wrong messageType", "actions/echo", `{"messageType":"readProperty","thingID":"urn:x","messageID":"1"}`, "400"},
		{"other thing", "actions/echo", `{"messageType":"invokeAction","thingID":"urn:other","messageID":"1","action":"echo","input":"x"}`, "400"},
		{"follow-up on an info topic", "properties/level/read", `{"messageType":"cancelAction","thingID":"urn:example:mqtt/thing+1","messageID":"1","action":"level"}`, "400"},
		{"write of a wrong type", "properties/level/write", `"not an integer"`, "400"},
		{"unknown property", "properties/nope/read", ``, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := c.request(testThingID2Topic(f, tc.topic), []byte(tc.payload))
			m := replies[len(replies)-1]
			if m.Type != proto.MsgError || m.Status != tc.status || m.Title == "" || m.Detail == "" || m.Instance == "" || m.ProblemType == "" {
				t.Fatalf("got %+v, want error %s with RFC 7807 members", m, tc.status)
			}
			if m.ThingID != testThingID {
				t.Errorf("error thingID %q", m.ThingID)
			}
		})
	}
}

func TestPropertyReadWrite(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	r := c.request(testThingID2Topic(f, "properties/level/write"), []byte(`9`))
	if m := r[len(r)-1]; m.Type != proto.MsgPropertyReading || m.Value.String() != "9" {
		t.Fatalf("write: %+v", m)
	}
	r = c.request(testThingID2Topic(f, "properties/level/read"), nil)
	if m := r[len(r)-1]; m.Type != proto.MsgPropertyReading || m.Value.String() != "9" {
		t.Fatalf("read: %+v", m)
	}
}

func TestCloseIdempotent(t *testing.T) {
	f := newFixture(t)
	if err := f.gw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.gw.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", Config{BrokerURL: "mqtt://127.0.0.1:1883"}, true},
		{"defaults filled in", Config{BrokerURL: "mqtt://127.0.0.1:1883"}.withDefaults(), true},
		{"no scheme", Config{BrokerURL: "127.0.0.1:1883"}, false},
		{"http", Config{BrokerURL: "http://127.0.0.1:1883"}, false},
		{"wildcard prefix", Config{BrokerURL: "mqtt://h:1", Prefix: "a/+"}, false},
		{"qos 3", Config{BrokerURL: "mqtt://h:1", QoS: 3}, false},
		{"keepAlive below 1 s", Config{BrokerURL: "mqtt://h:1", KeepAlive: time.Millisecond}, false},
		{"negative timeout", Config{BrokerURL: "mqtt://h:1", PublishTimeout: -1}, false},
		{"reconnectMax below the default reconnectMin", Config{BrokerURL: "mqtt://h:1", ReconnectMax: time.Millisecond}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
	// every field out of range is reported
	err := Config{BrokerURL: "http://h", QoS: 3, MaxInFlight: -1}.Validate()
	for _, want := range []string{"brokerURL", "qos", "maxInFlight"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	if _, err := New(Deps{Things: ThingListerFunc(func() []*proto.TD { return nil })}, Config{BrokerURL: "mqtt://h:1"}); err == nil ||
		!strings.Contains(err.Error(), "Deps.Invoker") {
		t.Errorf("New without an Invoker: %v", err)
	}
}

func testThingID2Topic(f *fixture, rest string) string {
	return f.topics.thing(testThingID) + "/" + rest
}

func mustValue(t *testing.T, x any) proto.Value {
	v, err := proto.ValueOf(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitFor calls f until it returns true (at most 5 s).
func waitFor(t *testing.T, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMaxInFlight(t *testing.T) {
	f := newFixtureAt(t, testBroker(t), func(c *Config) { c.MaxInFlight = 1 })
	c := newClient(t, f.url)
	resp := "test/inflight"
	c.subscribe(resp)
	topic := testThingID2Topic(f, "actions/block")
	c.publish(&paho.Publish{Topic: topic, Properties: &paho.PublishProperties{ResponseTopic: resp, CorrelationData: []byte("1")}})
	// The first holds the only slot (it reports nothing before it ends);
	// wait until the engine runs it, then the second is refused.
	time.Sleep(200 * time.Millisecond)
	c.publish(&paho.Publish{Topic: topic, Properties: &paho.PublishProperties{ResponseTopic: resp, CorrelationData: []byte("2")}})
	p, m := c.next()
	if string(p.Properties.CorrelationData) != "2" || m.Type != proto.MsgError || m.Status != "503" {
		t.Fatalf("got %s %+v, want a 503 for request 2", p.Properties.CorrelationData, m)
	}
	close(f.release)
	p, m = c.next()
	if string(p.Properties.CorrelationData) != "1" || m.Status != proto.ActionCompleted {
		t.Fatalf("got %s %+v, want request 1 completed", p.Properties.CorrelationData, m)
	}
}

func TestSyncWithdraws(t *testing.T) {
	f := newFixture(t)
	waitFor(t, func() bool { return f.thing.Changed("level", mustValue(t, 3)) > 0 })
	c := newClient(t, f.url)
	propTopic := f.topics.property(testThingID, "level")
	c.subscribe(propTopic)
	if _, m := c.next(); m.Value.String() != "3" {
		t.Fatalf("retained %+v", m)
	}
	f.setThings()
	if err := f.gw.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The retained value is cleared: an empty retained message.
	select {
	case p := <-c.got:
		if p.Topic != propTopic || len(p.Payload) != 0 {
			t.Fatalf("got %q %q, want the retained value cleared", p.Topic, p.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("retained value not cleared")
	}
	// Requests are not served any more.
	resp := "test/withdrawn"
	c.subscribe(resp)
	c.publish(&paho.Publish{Topic: testThingID2Topic(f, "actions/echo"), Payload: []byte(`"x"`),
		Properties: &paho.PublishProperties{ResponseTopic: resp}})
	select {
	case p := <-c.got:
		t.Fatalf("withdrawn Thing answered on %q: %s", p.Topic, p.Payload)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestReconnect(t *testing.T) {
	if os.Getenv("LMOS_TEST_MQTT_URL") != "" {
		t.Skip("restarts its own broker; LMOS_TEST_MQTT_URL is set")
	}
	port := freePort(t)
	url, stop := startBroker(t, port)
	f := newFixtureAt(t, url, nil)
	stop()
	startBroker(t, port)
	// The gateway reconnects and subscribes again (clean session).
	f.awaitServing(t)
	c := newClient(t, f.url)
	replies := c.request(testThingID2Topic(f, "actions/echo"), []byte(`"again"`))
	if m := replies[len(replies)-1]; m.Status != proto.ActionCompleted {
		t.Fatalf("after reconnect: %+v", m)
	}
}

func TestCBOREnvelope(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	resp := "test/cbor"
	c.subscribe(resp)
	req := proto.NewMessage(testThingID, proto.MsgInvokeAction)
	req.Name, req.Input = "echo", proto.StringValue("cbor")
	payload, err := proto.CBOR.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	c.publish(&paho.Publish{Topic: testThingID2Topic(f, "actions/echo"), Payload: payload,
		Properties: &paho.PublishProperties{ResponseTopic: resp}})
	for {
		select {
		case p := <-c.got:
			if p.Properties == nil || p.Properties.ContentType != proto.ContentTypeCBOR {
				t.Fatalf("reply content type %+v", p.Properties)
			}
			var m proto.Message
			if err := proto.CBOR.Unmarshal(p.Payload, &m); err != nil {
				t.Fatal(err)
			}
			if m.CorrelationID != req.MessageID {
				t.Fatalf("correlationID %q, want %q", m.CorrelationID, req.MessageID)
			}
			if m.EndsAction() {
				if m.Status != proto.ActionCompleted || m.Output.String() != `"cbor"` {
					t.Fatalf("final %+v", m)
				}
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no reply")
		}
	}
}

func TestObservedPropertyInitialValue(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	c.subscribe(f.topics.property(testThingID, "level"))
	_, m := c.next() // the value read when the gateway started observing
	if m.Type != proto.MsgPropertyReading || m.Value.String() != "1" {
		t.Fatalf("initial value: %+v", m)
	}
}

// Close ends everything the gateway started, a running action included,
// and disconnects: no goroutine of the gateway or of paho is left.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	url := testBroker(t)
	c := newClient(t, url)
	before := goleak.IgnoreCurrent()
	f := newFixtureAt(t, url, nil)
	c.publish(&paho.Publish{Topic: testThingID2Topic(f, "actions/block"),
		Properties: &paho.PublishProperties{ResponseTopic: "test/close"}})
	time.Sleep(100 * time.Millisecond) // the action runs
	done := make(chan error, 1)
	go func() { done <- f.gw.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close does not return while an action runs")
	}
	if err := f.engine.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
