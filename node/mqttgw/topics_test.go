package mqttgw

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lmosnode/lmosnode/proto"
)

func TestEscapeTopicLevel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"urn:uuid:6f1e0c2a-4b7e-4b8e-9a39-0d2a4c6f1e0c", "urn:uuid:6f1e0c2a-4b7e-4b8e-9a39-0d2a4c6f1e0c"},
		{"https://example.com/things/1", "https:%2F%2Fexample.com%2Fthings%2F1"},
		{"a+b#c", "a%2Bb%23c"},
		{"100%", "100%25"},
		{"$SYS", "%24SYS"},
		{"a$b", "a$b"},
		{"nul\x00", "nul%00"},
		{"", ""},
	} {
		got := EscapeTopicLevel(tc.in)
		if got != tc.want {
			t.Errorf("EscapeTopicLevel(%q) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := UnescapeTopicLevel(got)
		if err != nil || back != tc.in {
			t.Errorf("UnescapeTopicLevel(%q) = %q, %v", got, back, err)
		}
	}
}

func TestUnescapeTopicLevelRejects(t *testing.T) {
	for _, in := range []string{"a/b", "a+", "#", "%", "%2", "%41", "%2f", "a%24", "$SYS", "x%00\x00"} {
		if got, err := UnescapeTopicLevel(in); err == nil {
			t.Errorf("UnescapeTopicLevel(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseRequest(t *testing.T) {
	tp := newTopics("lmos/")
	for _, tc := range []struct {
		topic string
		want  request
		ok    bool
	}{
		{"lmos/urn:x/actions/go", request{"urn:x", "go", levelActions}, true},
		{"lmos/urn:x%2Fy/properties/p/read", request{"urn:x/y", "p", levelRead}, true},
		{"lmos/urn:x/properties/p%2Bq/write", request{"urn:x", "p+q", levelWrite}, true},
		{"lmos/urn:x/properties/p", request{}, false},
		{"lmos/urn:x/events/e", request{}, false},
		{"urn:x/actions/go", request{}, false},
		{"lmos/urn:x/actions/", request{}, false},
		{"lmos/urn:x/actions/go/more", request{}, false},
	} {
		got, err := tp.parseRequest(tc.topic)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRequest(%q) = %+v, %v", tc.topic, got, err)
		}
	}
	if got := tp.event("urn:a/b", "e/1"); got != "lmos/urn:a%2Fb/events/e%2F1" {
		t.Errorf("event topic %q", got)
	}
}

// FuzzTopicLevel checks that escaping gives one valid topic level that
// unescapes to the input, and that unescaping never panics.
func FuzzTopicLevel(f *testing.F) {
	for _, s := range []string{"urn:uuid:1", "a/b+c#d", "%25", "$x", "\x00", "%2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = UnescapeTopicLevel(s)
		e := EscapeTopicLevel(s)
		if strings.ContainsAny(e, "/+#\x00") || strings.HasPrefix(e, "$") {
			t.Fatalf("EscapeTopicLevel(%q) = %q: not a safe level", s, e)
		}
		if utf8.ValidString(s) != utf8.ValidString(e) {
			t.Fatalf("EscapeTopicLevel(%q) changed UTF-8 validity", s)
		}
		back, err := UnescapeTopicLevel(e)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: %q, %v", s, back, err)
		}
	})
}

// Gateway.Topic names the topics the gateway publishes and serves, the
// ones the consumer view's MQTT forms carry.
func TestGatewayTopic(t *testing.T) {
	for _, prefix := range []string{"", "lmos"} {
		g, err := New(Deps{Invoker: nopInvoker{}, Things: ThingListerFunc(func() []*proto.TD { return nil })}, Config{BrokerURL: "mqtt://127.0.0.1:1", Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		const id, name = "urn:dev:a/b", "te+mp"
		for _, c := range []struct{ got, want string }{
			{g.Topic(id, "properties", name), g.topics.property(id, name)},
			{g.Topic(id, "events", name), g.topics.event(id, name)},
		} {
			if c.got != c.want {
				t.Errorf("prefix %q: Topic = %q, want %q", prefix, c.got, c.want)
			}
		}
		req, err := g.topics.parseRequest(g.Topic(id, "properties", name, "read"))
		if err != nil || req.thingID != id || req.name != name || req.kind != levelRead {
			t.Errorf("prefix %q: read topic parses as %+v, %v", prefix, req, err)
		}
		req, err = g.topics.parseRequest(g.Topic(id, "actions", name))
		if err != nil || req.thingID != id || req.name != name || req.kind != levelActions {
			t.Errorf("prefix %q: action topic parses as %+v, %v", prefix, req, err)
		}
		if g.BrokerURL() != "mqtt://127.0.0.1:1" {
			t.Errorf("BrokerURL = %q", g.BrokerURL())
		}
		_ = g.Close()
	}
}
