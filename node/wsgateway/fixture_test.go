package wsgateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

const testThingID = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"

const testTDJSON = `{
  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
  "@type": "lmos:Agent",
  "id": "` + testThingID + `",
  "title": "Weather agent",
  "securityDefinitions": {"nosec": {"scheme": "nosec"}},
  "security": "nosec",
  "properties": {
    "temperature": {"type": "number", "readOnly": true, "observable": true, "forms": [{"href": "props/temperature"}]}
  },
  "actions": {
    "getWeather": {"input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "output": {"type": "string"}, "forms": [{"href": "actions/getWeather"}]},
    "count": {"input": {"type": "integer", "minimum": 0}, "forms": [{"href": "actions/count"}]},
    "block": {"forms": [{"href": "actions/block"}]},
    "flood": {"forms": [{"href": "actions/flood"}]},
    "chat": {"input": {"type": "string"}, "forms": [{"href": "actions/chat"}]}
  },
  "events": {
    "alert": {"data": {"type": "string"}, "forms": [{"href": "events/alert"}]}
  }
}`

func testTD(t testing.TB) *proto.TD {
	t.Helper()
	td, err := proto.ParseTD([]byte(testTDJSON))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func mustValue(t testing.TB, x any) proto.Value {
	t.Helper()
	v, err := proto.ValueOf(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tdSet is interact.Things over a mutable set of TDs.
type tdSet struct {
	mu  sync.Mutex
	tds map[string]*proto.TD
}

func (s *tdSet) TD(id string) (*proto.TD, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	td, ok := s.tds[id]
	return td, ok
}

func (s *tdSet) put(td *proto.TD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tds == nil {
		s.tds = map[string]*proto.TD{}
	}
	s.tds[td.ID] = td
}

func (s *tdSet) del(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tds, id)
}

// newSDKThing is the test Thing as Go handlers:
//
//	temperature  21.5
//	getWeather   "Sunny in <city>"
//	count        n progress reports 1..n, output n
//	block        reports running, signals blocked and waits for its context; signals cancelled
//	flood        64 KiB progress reports until cancelled; signals cancelled
//	chat         stream: every chunk upper-cased
func newSDKThing(t testing.TB, blocked, cancelled chan string) *interact.Thing {
	th := interact.NewThing()
	th.OnProperty("temperature", func(context.Context) (proto.Value, error) { return mustValue(t, 21.5), nil }, nil)
	th.OnAction("getWeather", func(_ context.Context, in proto.Value, _ func(proto.Value)) (proto.Value, error) {
		var q struct{ City string }
		if err := in.Decode(&q); err != nil {
			return proto.Value{}, err
		}
		return proto.StringValue("Sunny in " + q.City), nil
	})
	th.OnAction("count", func(ctx context.Context, in proto.Value, progress func(proto.Value)) (proto.Value, error) {
		var n int
		if err := in.Decode(&n); err != nil {
			return proto.Value{}, err
		}
		for i := 1; i <= n; i++ {
			progress(mustValue(t, i))
		}
		return mustValue(t, n), nil
	})
	th.OnAction("block", func(ctx context.Context, _ proto.Value, progress func(proto.Value)) (proto.Value, error) {
		progress(proto.StringValue("started"))
		blocked <- "block"
		<-ctx.Done()
		cancelled <- "block"
		return proto.Value{}, ctx.Err()
	})
	big := proto.StringValue(strings.Repeat("x", 64<<10))
	th.OnAction("flood", func(ctx context.Context, _ proto.Value, progress func(proto.Value)) (proto.Value, error) {
		for ctx.Err() == nil {
			progress(big)
		}
		cancelled <- "flood"
		return proto.Value{}, ctx.Err()
	})
	th.OnStream("chat", func(ctx context.Context, in <-chan proto.Value, out func(proto.Value) error) error {
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
	return th
}

// consumerEnv is an Engine serving the SDK Thing behind a consumer Gateway
// on an httptest server.
type consumerEnv struct {
	engine    *interact.Engine
	thing     *interact.Thing
	gw        *Gateway
	srv       *httptest.Server
	url       string
	blocked   chan string
	cancelled chan string
}

func newConsumerEnv(t *testing.T, cfg Config) *consumerEnv {
	t.Helper()
	things := &tdSet{}
	things.put(testTD(t))
	e, err := interact.NewEngine(interact.EngineDeps{Things: things}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	env := &consumerEnv{engine: e, blocked: make(chan string, 10), cancelled: make(chan string, 10)}
	env.thing = newSDKThing(t, env.blocked, env.cancelled)
	e.SetBackend(testThingID, env.thing)
	env.gw, err = NewGateway(GatewayDeps{Invoker: e}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ws", env.gw)
	env.srv = httptest.NewServer(mux)
	env.url = "ws" + strings.TrimPrefix(env.srv.URL, "http") + "/ws"
	t.Cleanup(func() {
		_ = env.gw.Close()
		env.srv.Close()
		_ = e.Close()
	})
	return env
}

// client is a test consumer (or agent) socket.
type client struct {
	t  testing.TB
	ws *websocket.Conn
}

func dial(t testing.TB, url string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{proto.WebSocketSubprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(proto.MaxMessageSize)
	c := &client{t: t, ws: ws}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return c
}

func (c *client) send(m *proto.Message) {
	c.t.Helper()
	data, err := proto.JSON.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(data)
}

func (c *client) sendRaw(data []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, data); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() *proto.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	codec := proto.JSON
	if typ == websocket.MessageBinary {
		codec = proto.CBOR
	}
	m := new(proto.Message)
	if err := codec.Unmarshal(data, m); err != nil {
		c.t.Fatalf("decode %s: %v", data, err)
	}
	return m
}

// recvRaw reads one text frame as a JSON object.
func (c *client) recvRaw() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		c.t.Fatalf("decode %s: %v", data, err)
	}
	return obj
}

func invoke(t testing.TB, action string, input any) *proto.Message {
	m := proto.NewMessage(testThingID, proto.MsgInvokeAction)
	m.Name = action
	if input != nil {
		m.Input = mustValue(t, input)
	}
	return m
}

func wantError(t testing.TB, m *proto.Message, status string) {
	t.Helper()
	if m.Type != proto.MsgError || m.Status != status {
		t.Fatalf("got %s status %q (%s: %s), want error %s", m.Type, m.Status, m.Title, m.Detail, status)
	}
	if m.ProblemType == "" || m.Title == "" || m.Detail == "" || m.Instance == "" {
		t.Fatalf("error lacks RFC 7807 members: %+v", m)
	}
}
