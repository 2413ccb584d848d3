package fanout

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// topicSub is this node's gossipsub subscription to one events topic,
// shared by all local subscribers of the Thing. Its consumers are
// protected by Fanout.mu.
type topicSub struct {
	j         *joined
	sub       *pubsub.Subscription
	consumers map[*consumer]struct{}
}

// consumer is one local subscriber.
type consumer struct {
	f     *Fanout
	ts    *topicSub
	req   *lmosproto.Message // what it subscribed to, for error messages
	event string             // "" = all events
	wrap  func(*lmosproto.Message) *lmosproto.Message
	ch    chan *lmosproto.Message // capacity Buffer+1: the last slot is for the error that ends it
	stop  func() bool
	ended bool
}

// Subscribe delivers the events of the Thing thingID of publisher (event
// names one event, "" all) from the Thing's topic, joining the topic if no
// local subscriber has yet. Events arrive on the channel as published by
// the owner. A subscriber that lets Config.Buffer events wait unread is
// dropped: it gets the queued events, then a 503 error message, and the
// channel is closed. The channel is closed as well, without a message,
// after cancel or when ctx is done; Close ends it with a 503. cancel may be
// called any number of times; the last local subscriber's cancel leaves
// the topic.
//
// It fails for the node's own Things (subscribe through the Engine),
// for Things restricted to groups (ErrGroupScoped), and, when Deps.TD is
// set, for unknown Things and events (ErrUnknownThing, ErrUnknownEvent).
func (f *Fanout) Subscribe(ctx context.Context, publisher peer.ID, thingID, event string) (<-chan *lmosproto.Message, func(), error) {
	typ := lmosproto.MsgSubscribeAllEvents
	if event != "" {
		typ = lmosproto.MsgSubscribeEvent
	}
	req := lmosproto.NewMessage(thingID, typ)
	req.Name = event
	c, err := f.subscribe(ctx, publisher, req, nil)
	if err != nil {
		return nil, nil, err
	}
	return c.ch, c.cancel, nil
}

// subscribe attaches a consumer for req (subscribeEvent or
// subscribeAllEvents) to the topic; wrap, if set, rewrites each event for
// it.
func (f *Fanout) subscribe(ctx context.Context, publisher peer.ID, req *lmosproto.Message, wrap func(*lmosproto.Message) *lmosproto.Message) (*consumer, error) {
	thingID := req.ThingID
	if err := publisher.Validate(); err != nil {
		return nil, fmt.Errorf("fanout: thing %q: publisher: %w", thingID, err)
	}
	if publisher == f.p.Self {
		return nil, fmt.Errorf("fanout: thing %q of %s is this node's own; subscribe through the engine", thingID, publisher)
	}
	if f.p.TD != nil {
		td, ok := f.p.TD(publisher, thingID)
		switch {
		case !ok:
			return nil, fmt.Errorf("thing %q of %s: %w", thingID, publisher, ErrUnknownThing)
		case len(td.Groups) > 0:
			return nil, fmt.Errorf("thing %q of %s: %w", thingID, publisher, ErrGroupScoped)
		case req.Name != "" && td.Events[req.Name] == nil:
			return nil, fmt.Errorf("thing %q of %s: event %q: %w", thingID, publisher, req.Name, ErrUnknownEvent)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	name := TopicName(publisher, thingID)
	ts := f.subs[name]
	if ts == nil {
		j, err := f.joinLocked(publisher, thingID)
		if err != nil {
			return nil, err
		}
		sub, err := j.topic.Subscribe()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("fanout: thing %q of %s: subscribe: %w", thingID, publisher, err), f.releaseLocked(j))
		}
		ts = &topicSub{j: j, sub: sub, consumers: map[*consumer]struct{}{}}
		f.subs[name] = ts
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.readTopic(ts)
		}()
	}
	c := &consumer{f: f, ts: ts, req: req, event: req.Name, wrap: wrap, ch: make(chan *lmosproto.Message, f.cfg.Buffer+1)}
	ts.consumers[c] = struct{}{}
	c.stop = context.AfterFunc(ctx, c.cancel)
	return c, nil
}

// readTopic delivers the topic's accepted events to its consumers until
// the subscription is cancelled or the Fanout closes.
func (f *Fanout) readTopic(ts *topicSub) {
	for {
		msg, err := ts.sub.Next(f.ctx)
		if err != nil {
			return
		}
		m, ok := msg.ValidatorData.(*lmosproto.Message)
		if !ok {
			// Not validated by our validator (impossible: it is
			// registered before the topic is joined).
			continue
		}
		f.deliver(ts, m)
	}
}

// deliver offers m to every matching consumer of ts, dropping those whose
// queue is full.
func (f *Fanout) deliver(ts *topicSub, m *lmosproto.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range ts.consumers {
		if c.event != "" && c.event != m.Name {
			continue
		}
		if len(c.ch) >= f.cfg.Buffer {
			f.log.Info("slow subscriber dropped", "topic", ts.j.name, "subscription", c.req)
			c.endLocked(lmosproto.NewError(c.req, http.StatusServiceUnavailable, interact.TitleUnavailable,
				fmt.Sprintf("subscriber too slow: %d events of thing %q were waiting unread; subscribe again", f.cfg.Buffer, c.req.ThingID)))
			continue
		}
		out := m.Clone()
		if c.wrap != nil {
			out = c.wrap(out)
		}
		c.ch <- out
	}
}

// cancel ends the subscription on the subscriber's behalf.
func (c *consumer) cancel() {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.endLocked(nil)
}

// endLocked delivers final (if not nil), closes the channel and detaches
// the consumer, leaving the topic after the last one. Called with f.mu
// held.
func (c *consumer) endLocked(final *lmosproto.Message) {
	if c.ended {
		return
	}
	c.ended = true
	if c.stop != nil {
		c.stop()
	}
	if final != nil {
		select {
		case c.ch <- final:
		default:
		}
	}
	close(c.ch)
	f, ts := c.f, c.ts
	delete(ts.consumers, c)
	if len(ts.consumers) > 0 || f.closed {
		// Close cancels and releases every topic itself.
		return
	}
	ts.sub.Cancel()
	delete(f.subs, ts.j.name)
	if err := f.releaseLocked(ts.j); err != nil {
		f.log.Warn("leave events topic", "topic", ts.j.name, "err", err)
	}
}

func shutdown(c *consumer) *lmosproto.Message {
	return lmosproto.NewError(c.req, http.StatusServiceUnavailable, interact.TitleUnavailable, "the node is shutting down")
}
