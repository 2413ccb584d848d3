package mqttgw

import (
	"context"
	"time"

	"github.com/eclipse/paho.golang/paho"

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
			g.feed(ctx, req, func(m *proto.Message) (string, bool) {
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
		g.wg.Go(func() {
			g.feed(ctx, req, func(m *proto.Message) (string, bool) {
				return g.topics.property(m.ThingID, name), true
			})
		})
	}
}

// feed holds the subscription req opens and publishes every notification
// to the topic that topicOf names, opening the subscription again after
// ResubscribeDelay when it ends, until ctx is done.
func (g *Gateway) feed(ctx context.Context, req *proto.Message, topicOf func(*proto.Message) (string, bool)) {
	for {
		r := req.Clone()
		r.MessageID = proto.NewMessage(r.ThingID, r.Type).MessageID
		s, err := g.inv.Invoke(ctx, r)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Warn("mqtt feed: invoke failed", "request", r, "err", err)
			}
			return
		}
		for m := range s.Replies() {
			if m.Type == proto.MsgError {
				if ctx.Err() == nil {
					g.log.Warn("mqtt feed ended with an error", "request", r, "title", m.Title, "detail", m.Detail)
				}
				continue
			}
			topic, retain := topicOf(m)
			payload, err := proto.JSON.Marshal(m)
			if err != nil {
				g.log.Warn("mqtt feed: cannot encode notification", "message", m, "err", err)
				continue
			}
			p := &paho.Publish{Topic: topic, Retain: retain, Payload: payload,
				Properties: &paho.PublishProperties{ContentType: proto.ContentTypeJSON}}
			if err := g.publish(ctx, p); err != nil && ctx.Err() == nil {
				g.log.Debug("mqtt notification dropped", "topic", topic, "err", err)
			}
		}
		_ = s.Close()
		t := time.NewTimer(g.cfg.ResubscribeDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
