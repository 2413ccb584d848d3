package mqttgw

import (
	"context"

	"github.com/eclipse/paho.golang/paho"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// startFeeds starts the event and observation sessions of a Thing, ended
// by ctx. Called with g.mu held (g not closed).
func (g *Gateway) startFeeds(ctx context.Context, td *proto.TD) {
	ctx = interact.WithCaller(ctx, g.caller)
	if len(td.Events) > 0 {
		req := proto.NewMessage(td.ID, proto.MsgSubscribeAllEvents)
		g.wg.Go(func() {
			g.feed(ctx, req, nil, func(m *proto.Message) (string, bool) {
				return g.topics.event(m.ThingID, m.Name), false
			})
		})
	}
	for name, p := range td.Properties {
		if p == nil || p.Observable == nil || !*p.Observable {
			continue
		}
		req := proto.NewMessage(td.ID, proto.MsgObserveProperty)
		req.Name = name
		var initial *proto.Message
		if p.WriteOnly == nil || !*p.WriteOnly {
			initial = proto.NewMessage(td.ID, proto.MsgReadProperty)
			initial.Name = name
		}
		g.wg.Go(func() {
			g.feed(ctx, req, initial, func(m *proto.Message) (string, bool) {
				return g.topics.property(m.ThingID, name), true
			})
		})
	}
}

// feed holds the subscription req opens and publishes every notification
// to the topic that topicOf names, opening the subscription again after
// ResubscribeDelay when it ends, until ctx is done. When initial is set
// (a readProperty), its reading is published once the subscription is
// open and before any notification, so that the retained value is the
// current one from the start and never older than a notification.
func (g *Gateway) feed(ctx context.Context, req, initial *proto.Message, topicOf func(*proto.Message) (string, bool)) {
	for {
		// Nothing can be published before the broker is reachable.
		if g.AwaitConnection(ctx) != nil {
			return
		}
		s, err := g.inv.Invoke(ctx, fresh(req))
		if err != nil {
			if ctx.Err() == nil {
				g.log.Warn("mqtt feed: invoke failed", "request", req, "err", err)
			}
			return
		}
		if initial != nil {
			if rs, err := g.inv.Invoke(ctx, fresh(initial)); err == nil {
				for m := range rs.Replies() {
					g.notify(ctx, req, m, topicOf)
				}
				_ = rs.Close()
			}
		}
		for m := range s.Replies() {
			g.notify(ctx, req, m, topicOf)
		}
		_ = s.Close()
		if !backoff.Sleep(ctx, g.cfg.ResubscribeDelay) {
			return
		}
	}
}

// fresh returns a copy of req with a new messageID.
func fresh(req *proto.Message) *proto.Message {
	r := req.Clone()
	r.MessageID = proto.NewMessage(r.ThingID, r.Type).MessageID
	return r
}

// notify publishes one notification of the feed that req opened.
func (g *Gateway) notify(ctx context.Context, req, m *proto.Message, topicOf func(*proto.Message) (string, bool)) {
	if m.Type == proto.MsgError {
		if ctx.Err() == nil {
			g.log.Warn("mqtt feed error", "request", req, "title", m.Title, "detail", m.Detail)
		}
		return
	}
	topic, retain := topicOf(m)
	payload, err := proto.JSON.Marshal(m)
	if err != nil {
		g.log.Warn("mqtt feed: cannot encode notification", "message", m, "err", err)
		return
	}
	p := &paho.Publish{Topic: topic, Retain: retain, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: proto.ContentTypeJSON}}
	if err := g.publish(ctx, p); err != nil && ctx.Err() == nil {
		g.log.Debug("mqtt notification dropped", "topic", topic, "err", err)
	}
}
