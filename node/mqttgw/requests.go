package mqttgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/eclipse/paho.golang/paho"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// memberResponseTopic is the envelope extension member that names the
// response topic for MQTT 3.1.1 clients.
const memberResponseTopic = "responseTopic"

// inbound is one request received from the broker, decoded.
type inbound struct {
	topic         string
	req           *proto.Message // nil when the payload could not be decoded
	codec         proto.Codec    // of the replies
	responseTopic string
	correlation   []byte // MQTT v5 correlation data, echoed
	bad           error  // why req is unusable (400)
	followUp      bool   // cancelAction, queryAction, streamInput or streamEnd for a running invocation
}

// onPublish is paho's callback for every message received. It must not
// block: each request is served on its own goroutine, at most MaxInFlight
// at once.
func (g *Gateway) onPublish(pr paho.PublishReceived) (bool, error) {
	in := g.decode(pr.Packet)
	if in == nil {
		return true, nil
	}
	if in.followUp && in.bad == nil {
		g.followUp(in)
		return true, nil
	}
	select {
	case g.sem <- struct{}{}:
	default:
		g.log.Warn("mqtt request refused: too many in flight", "topic", in.topic, "maxInFlight", g.cfg.MaxInFlight)
		if in.responseTopic == "" {
			return true, nil
		}
		// Answered on a goroutine of its own (paho's callback must not wait
		// for the broker), at most MaxInFlight such answers at once; beyond
		// that the request gets no answer at all.
		select {
		case g.rejecting <- struct{}{}:
		default:
			return true, nil
		}
		msg := errorFor(in, http.StatusServiceUnavailable, "Service Unavailable",
			fmt.Sprintf("gateway %s serves %d requests already (topic %q)", g.cfg.ClientID, g.cfg.MaxInFlight, in.topic))
		if !g.goOwned(func() {
			defer func() { <-g.rejecting }()
			g.reply(g.ctx, in, msg)
		}) {
			<-g.rejecting
		}
		return true, nil
	}
	// The session is registered here, in the order the broker delivered
	// the requests, so that follow-ups published right after it find it.
	ls := g.register(in)
	if !g.goOwned(func() {
		defer func() { <-g.sem }()
		g.serve(in, ls)
	}) {
		g.unregister(ls)
		<-g.sem
	}
	return true, nil
}

// decode turns a received PUBLISH into a request; nil when the message is
// not for the gateway (not a request topic, a Thing not exposed).
func (g *Gateway) decode(p *paho.Publish) *inbound {
	rt, err := g.topics.parseRequest(p.Topic)
	if err != nil {
		g.log.Debug("mqtt message ignored", "topic", p.Topic, "err", err)
		return nil
	}
	g.mu.Lock()
	_, ok := g.exposed[rt.thingID]
	g.mu.Unlock()
	if !ok {
		g.log.Debug("mqtt request for a thing not exposed", "topic", p.Topic, "thingID", rt.thingID)
		return nil
	}
	in := &inbound{topic: p.Topic, codec: proto.JSON}
	if p.Properties != nil {
		in.responseTopic = p.Properties.ResponseTopic
		in.correlation = p.Properties.CorrelationData
	}
	want := map[string]proto.MessageType{
		levelActions: proto.MsgInvokeAction,
		levelRead:    proto.MsgReadProperty,
		levelWrite:   proto.MsgWriteProperty,
	}[rt.kind]

	if codec, envelope := isEnvelope(p.Payload); envelope {
		in.codec = codec
		var m proto.Message
		if err := codec.Unmarshal(p.Payload, &m); err != nil {
			in.bad = fmt.Errorf("topic %q: undecodable envelope: %w", p.Topic, err)
			// The error still names the Thing and the affordance.
			in.req = proto.NewMessage(rt.thingID, want)
			in.req.Name = rt.name
			return in
		}
		if v, ok := m.Extensions[memberResponseTopic]; ok {
			var s string
			if err := v.Decode(&s); err == nil && in.responseTopic == "" {
				in.responseTopic = s
			}
			delete(m.Extensions, memberResponseTopic)
		}
		in.req = &m
		in.followUp = rt.kind == levelActions && m.Type.FollowsAction()
		switch {
		case m.Type != want && !in.followUp:
			in.bad = fmt.Errorf("topic %q takes %s, not %q", p.Topic, want, m.Type)
		case m.ThingID != "" && m.ThingID != rt.thingID:
			in.bad = fmt.Errorf("topic %q is Thing %q, the envelope names %q", p.Topic, rt.thingID, m.ThingID)
		case m.Name != "" && m.Name != rt.name:
			in.bad = fmt.Errorf("topic %q is %q, the envelope names %q", p.Topic, rt.name, m.Name)
		}
		m.ThingID, m.Name = rt.thingID, rt.name
		if m.MessageID == "" {
			m.MessageID = proto.NewMessage(m.ThingID, m.Type).MessageID
		}
	} else {
		m := proto.NewMessage(rt.thingID, want)
		m.Name = rt.name
		in.req = m
		if rt.kind != levelRead && len(bytes.TrimSpace(p.Payload)) > 0 {
			v, err := proto.ParseValue(p.Payload)
			if err != nil {
				in.bad = fmt.Errorf("topic %q: payload is neither an LMOS envelope nor a JSON value: %w", p.Topic, err)
				return in
			}
			if rt.kind == levelActions {
				m.Input = v
			} else {
				m.Data = v
			}
		} else if rt.kind == levelWrite {
			in.bad = fmt.Errorf("topic %q: a write needs a value", p.Topic)
		}
	}
	if in.responseTopic != "" && !validResponseTopic(in.responseTopic) {
		g.log.Warn("mqtt request with an invalid response topic", "topic", p.Topic, "responseTopic", in.responseTopic)
		in.responseTopic = ""
	}
	return in
}

// isEnvelope reports whether a payload is an LMOS envelope and its codec:
// a CBOR map, or a JSON object with a string member "messageType".
func isEnvelope(payload []byte) (proto.Codec, bool) {
	codec, ok := proto.SniffCodec(payload)
	if !ok {
		return nil, false
	}
	if codec == proto.CBOR {
		return codec, true
	}
	var probe struct {
		MessageType json.RawMessage `json:"messageType"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		// Not valid JSON: let the envelope decoder report why.
		return codec, true
	}
	return codec, len(probe.MessageType) > 0 && probe.MessageType[0] == '"'
}

// serve invokes one request and publishes its replies. ls (nil for
// requests that are not registered invocations) receives the session.
func (g *Gateway) serve(in *inbound, ls *liveSession) {
	ctx := interact.WithCaller(g.ctx, g.caller)
	if ls != nil {
		defer g.unregister(ls)
	}
	if in.bad != nil {
		g.log.Debug("mqtt bad request", "topic", in.topic, "err", in.bad)
		g.reply(ctx, in, errorFor(in, http.StatusBadRequest, "Bad Request", in.bad.Error()))
		return
	}
	req := in.req
	if in.responseTopic == "" {
		req.OneWay = true
	}
	s, err := g.inv.Invoke(ctx, req)
	if err != nil {
		g.reply(ctx, in, errorFor(in, http.StatusServiceUnavailable, "Service Unavailable",
			fmt.Sprintf("topic %q: %v", in.topic, err)))
		return
	}
	defer func() { _ = s.Close() }()
	if ls != nil {
		ls.s = s
		close(ls.ready)
	}
	for m := range s.Replies() {
		g.reply(ctx, in, m)
		if m.Ends(req) {
			return
		}
	}
}

// reply publishes one reply to the request's response topic (nothing for
// a one-way request).
func (g *Gateway) reply(ctx context.Context, in *inbound, m *proto.Message) {
	if in.responseTopic == "" {
		return
	}
	payload, err := in.codec.Marshal(m)
	if err != nil {
		g.log.Warn("mqtt reply not encodable", "topic", in.topic, "message", m, "err", err)
		return
	}
	p := &paho.Publish{Topic: in.responseTopic, Payload: payload, Properties: &paho.PublishProperties{
		ContentType:     in.codec.ContentType(),
		CorrelationData: in.correlation,
	}}
	if err := g.publish(ctx, p); err != nil && ctx.Err() == nil {
		g.log.Warn("mqtt reply lost", "topic", in.topic, "responseTopic", in.responseTopic, "err", err)
	}
}

// errorFor returns the error envelope answering a request.
func errorFor(in *inbound, status int, title, detail string) *proto.Message {
	if in.req != nil {
		return proto.NewError(in.req, status, title, detail)
	}
	return proto.NewError(nil, status, title, detail)
}
