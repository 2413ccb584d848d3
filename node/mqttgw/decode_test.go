package mqttgw

import (
	"context"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

type nopInvoker struct{}

func (nopInvoker) Invoke(context.Context, *proto.Message) (interact.Session, error) {
	return nil, interact.ErrSessionClosed
}

// FuzzDecodeRequest checks that any payload on a request topic decodes to
// a request for the topic's Thing and affordance, or to a 400, and never
// panics.
func FuzzDecodeRequest(f *testing.F) {
	g, err := New(Deps{Invoker: nopInvoker{}, Things: ThingListerFunc(func() []*proto.TD { return nil })}, Config{BrokerURL: "mqtt://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = g.Close() })
	g.exposed["urn:x"] = &exposed{td: &proto.TD{ID: "urn:x"}, cancel: func() {}}
	for _, s := range []string{``, `"x"`, `42`, `{"a":1}`, `{"messageType":"invokeAction","thingID":"urn:x","messageID":"1","action":"a","input":1,"responseTopic":"r"}`, `{nope`, "\xa1\x61\x61\x01"} {
		f.Add("urn:x/actions/a", []byte(s))
		f.Add("urn:x/properties/p/write", []byte(s))
	}
	f.Fuzz(func(t *testing.T, topic string, payload []byte) {
		in := g.decode(&paho.Publish{Topic: topic, Payload: payload})
		if in == nil {
			return
		}
		rt, err := g.topics.parseRequest(topic)
		if err != nil {
			t.Fatalf("decoded a request from non-request topic %q", topic)
		}
		if in.req == nil {
			t.Fatalf("no request for %q %q", topic, payload)
		}
		if in.req.ThingID != rt.thingID || in.req.Name != rt.name {
			t.Fatalf("request %+v does not fit topic %q", in.req, topic)
		}
		if in.responseTopic != "" && !validResponseTopic(in.responseTopic) {
			t.Fatalf("invalid response topic %q kept", in.responseTopic)
		}
	})
}
