package mqttgw

import (
	"bytes"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/lmosnode/lmosnode/proto"
)

// session is a consumer's invocation held open over the broker.
type session struct {
	c    *client
	f    *fixture
	resp string
	corr []byte
	name string
}

// open publishes an invokeAction envelope with v5 correlation data.
func open(t *testing.T, f *fixture, name string, req *proto.Message) *session {
	t.Helper()
	c := newClient(t, f.url)
	s := &session{c: c, f: f, resp: "test/replies/" + proto.NewMessage("", "").MessageID,
		corr: []byte(proto.NewMessage("", "").MessageID), name: name}
	c.subscribe(s.resp)
	s.publish(req)
	return s
}

func (s *session) publish(m *proto.Message) {
	s.c.t.Helper()
	m.ThingID, m.Name = testThingID, s.name
	payload, err := proto.JSON.Marshal(m)
	if err != nil {
		s.c.t.Fatal(err)
	}
	s.c.publish(&paho.Publish{Topic: testThingID2Topic(s.f, "actions/"+s.name), Payload: payload,
		Properties: &paho.PublishProperties{ResponseTopic: s.resp, CorrelationData: s.corr}})
}

func (s *session) next() *proto.Message {
	s.c.t.Helper()
	p, m := s.c.next()
	if p.Topic != s.resp || !bytes.Equal(p.Properties.CorrelationData, s.corr) {
		s.c.t.Fatalf("reply on %q with %+v", p.Topic, p.Properties)
	}
	return m
}

func TestCancelAction(t *testing.T) {
	f := newFixture(t)
	s := open(t, f, "block", proto.NewMessage(testThingID, proto.MsgInvokeAction))
	// "block" sends no reply before it ends: the follow-up is published
	// right away and still reaches the invocation.
	s.publish(proto.NewMessage(testThingID, proto.MsgCancelAction))
	for {
		m := s.next()
		if m.Type == proto.MsgError {
			t.Fatalf("cancel: %+v", m)
		}
		if m.EndsAction() {
			if m.Status != proto.ActionCancelled {
				t.Fatalf("final %+v, want cancelled", m)
			}
			return
		}
	}
}

func TestQueryAction(t *testing.T) {
	f := newFixture(t)
	defer close(f.release)
	s := open(t, f, "block", proto.NewMessage(testThingID, proto.MsgInvokeAction))
	// "block" sends no reply before it ends: the follow-up is published
	// right away and still reaches the invocation.
	s.publish(proto.NewMessage(testThingID, proto.MsgQueryAction))
	m := s.next()
	if m.Type != proto.MsgActionStatus || m.EndsAction() {
		t.Fatalf("query reply %+v, want a running actionStatus", m)
	}
}

func TestStreamingSession(t *testing.T) {
	f := newFixture(t)
	req := proto.NewMessage(testThingID, proto.MsgInvokeAction)
	req.Input, req.Stream = proto.StringValue("hello"), true
	s := open(t, f, "upper", req)
	if m := s.next(); m.Type != proto.MsgActionStatus || !m.Stream || m.Status != proto.ActionRunning {
		t.Fatalf("session not accepted: %+v", m)
	}
	in := proto.NewMessage(testThingID, proto.MsgStreamInput)
	in.Input = proto.StringValue("world")
	s.publish(in)
	s.publish(proto.NewMessage(testThingID, proto.MsgStreamEnd))
	var outs []string
	for {
		m := s.next()
		if m.Type == proto.MsgError {
			t.Fatalf("session: %+v", m)
		}
		if m.EndsAction() {
			if m.Status != proto.ActionCompleted {
				t.Fatalf("final %+v", m)
			}
			break
		}
		if m.Output.String() != "" {
			outs = append(outs, m.Output.String())
		}
	}
	if strings.Join(outs, " ") != `"HELLO" "WORLD"` {
		t.Fatalf("outputs %v", outs)
	}
}

func TestFollowUpUnknownCorrelation(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	for _, typ := range []proto.MessageType{proto.MsgCancelAction, proto.MsgQueryAction, proto.MsgStreamEnd} {
		m := proto.NewMessage(testThingID, typ)
		m.Name, m.CorrelationID = "block", "no-such-invocation"
		payload, err := proto.JSON.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		replies := c.request(testThingID2Topic(f, "actions/block"), payload)
		if last := replies[len(replies)-1]; last.Type != proto.MsgError || last.Status != "404" {
			t.Fatalf("%s: got %+v, want 404", typ, last)
		}
	}
}

// TestCancelActionV3Style cancels by the envelope correlationID, without
// MQTT v5 properties.
func TestCancelActionV3Style(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	resp := "test/v3/" + proto.NewMessage("", "").MessageID
	c.subscribe(resp)
	corr := proto.NewMessage("", "").MessageID
	topic := testThingID2Topic(f, "actions/block")
	for _, typ := range []proto.MessageType{proto.MsgInvokeAction, proto.MsgCancelAction} {
		m := proto.NewMessage(testThingID, typ)
		m.Name, m.CorrelationID = "block", corr
		m.Extensions = map[string]proto.Value{memberResponseTopic: proto.StringValue(resp)}
		payload, err := proto.JSON.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		c.publish(&paho.Publish{Topic: topic, Payload: payload})
	}
	for {
		_, m := c.next()
		if m.CorrelationID != corr || m.Type == proto.MsgError {
			t.Fatalf("reply %+v", m)
		}
		if m.EndsAction() {
			if m.Status != proto.ActionCancelled {
				t.Fatalf("final %+v, want cancelled", m)
			}
			return
		}
	}
}
