package interact

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
    "temperature": {"type": "number", "readOnly": true, "observable": true, "forms": [{"href": "props/temperature"}]},
    "config": {"type": "object", "properties": {"unit": {"type": "string", "enum": ["C", "F"]}}, "required": ["unit"], "observable": true, "forms": [{"href": "props/config"}]},
    "secret": {"type": "string", "writeOnly": true, "forms": [{"href": "props/secret"}]},
    "broken": {"type": "string", "forms": [{"href": "props/broken"}]}
  },
  "actions": {
    "getWeather": {"input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "output": {"type": "string"}, "forms": [{"href": "actions/getWeather"}]},
    "count": {"input": {"type": "integer", "minimum": 0}, "forms": [{"href": "actions/count"}]},
    "block": {"forms": [{"href": "actions/block"}]},
    "crash": {"forms": [{"href": "actions/crash"}]},
    "chat": {"input": {"type": "string"}, "forms": [{"href": "actions/chat"}]}
  },
  "events": {
    "alert": {"data": {"type": "string"}, "forms": [{"href": "events/alert"}]},
    "tick": {"data": {"type": "integer"}, "forms": [{"href": "events/tick"}]}
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

// oneThing is Things with the test TD only.
func oneThing(t testing.TB) Things {
	td := testTD(t)
	return ThingsFunc(func(id string) (*proto.TD, bool) {
		if id == testThingID {
			return td, true
		}
		return nil, false
	})
}

func mustValue(t testing.TB, x any) proto.Value {
	t.Helper()
	v, err := proto.ValueOf(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testThingState is what the test Thing's handlers share, so that tests
// can drive events and property changes whatever the backend.
type testThingState struct {
	temperature atomic.Value  // proto.Value
	config      atomic.Value  // proto.Value
	blocked     chan struct{} // receives when "block" starts
}

func newTestState(t testing.TB) *testThingState {
	s := &testThingState{blocked: make(chan struct{}, 100)}
	s.temperature.Store(mustValue(t, 21.5))
	s.config.Store(mustValue(t, map[string]string{"unit": "C"}))
	return s
}

// newSDKThing returns the test Thing as Go handlers:
//
//	temperature  read-only, observable
//	config       read/write, observable
//	broken       read fails with a plain error
//	getWeather   "Sunny in <city>"
//	count        n progress reports 1..n, output n
//	block        reports running and waits for its context
//	crash        panics
//	chat         stream: every chunk upper-cased; ends at streamEnd
func newSDKThing(t testing.TB, st *testThingState) *Thing {
	th := NewThing()
	th.OnProperty("temperature", func(context.Context) (proto.Value, error) {
		return st.temperature.Load().(proto.Value), nil
	}, nil)
	th.OnProperty("config", func(context.Context) (proto.Value, error) {
		return st.config.Load().(proto.Value), nil
	}, func(_ context.Context, v proto.Value) error {
		st.config.Store(v)
		return nil
	})
	th.OnProperty("broken", func(context.Context) (proto.Value, error) {
		return proto.Value{}, errors.New("sensor unplugged")
	}, nil)
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
		st.blocked <- struct{}{}
		<-ctx.Done()
		return proto.Value{}, ctx.Err()
	})
	th.OnAction("crash", func(context.Context, proto.Value, func(proto.Value)) (proto.Value, error) {
		panic("boom")
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

// collect reads a session's replies until the channel closes.
func collect(t testing.TB, s Session) []*proto.Message {
	t.Helper()
	var out []*proto.Message
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-s.Replies():
			if !ok {
				return out
			}
			out = append(out, m)
		case <-timeout:
			t.Fatalf("replies of %s not closed after 10s; got %v", s.Request().Type, out)
		}
	}
}

// next reads one reply.
func next(t testing.TB, s Session) *proto.Message {
	t.Helper()
	select {
	case m, ok := <-s.Replies():
		if !ok {
			t.Fatalf("replies of %s closed early", s.Request().Type)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no reply to %s within 10s", s.Request().Type)
	}
	return nil
}

func request(typ proto.MessageType, name string) *proto.Message {
	m := proto.NewMessage(testThingID, typ)
	m.Name = name
	return m
}

func invoke(t testing.TB, inv Invoker, req *proto.Message) Session {
	t.Helper()
	s, err := inv.Invoke(context.Background(), req)
	if err != nil {
		t.Fatalf("Invoke %s: %v", req.Type, err)
	}
	return s
}

// wantError checks that m is an error message with status and a detail
// containing detail.
func wantError(t testing.TB, m *proto.Message, status, detail string) {
	t.Helper()
	if m.Type != proto.MsgError {
		t.Fatalf("got %s %s (%v), want error %s", m.Type, m.Status, m.Output, status)
	}
	if m.Status != status || !strings.Contains(m.Detail, detail) {
		t.Fatalf("got error %s %q: %q, want %s containing %q", m.Status, m.Title, m.Detail, status, detail)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("error message invalid: %v", err)
	}
}
