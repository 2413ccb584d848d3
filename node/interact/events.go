package interact

import (
	"context"
	"fmt"
	"net/http"

	"github.com/lmosnode/lmosnode/proto"
)

// Events and observations.
//
// The engine calls a Thing's backend once per event (subscribeEvent) or
// observed property (observeProperty) that has at least one subscriber: a
// feed. Every message of a feed is fanned out to the feed's subscribers,
// each through its own bounded queue, under the engine's lock. A
// subscriber whose queue is full is dropped with a 503 error rather than
// hold up the feed (and every other subscriber): see the package
// documentation. When the last subscriber leaves, the feed's context is
// cancelled. subscribeAllEvents attaches one subscriber to the feeds of
// every event of the TD.
//
// A gossipsub fan-out of a Thing's events (publish-subscribe across nodes)
// is one more subscriber of subscribeAllEvents: it needs nothing from the
// engine beyond Invoke.

// feedKey names a feed: a Thing's event or observed property.
type feedKey struct {
	thingID string
	event   bool // an event; otherwise an observed property
	name    string
}

// feed is one running backend call serving an event or an observed
// property. Its fields are protected by Engine.mu.
type feed struct {
	key    feedKey
	cancel context.CancelFunc
	subs   map[*subscription]struct{}
	ended  bool
}

// subscription is a consumer's subscribeEvent, subscribeAllEvents or
// observeProperty, and its Session. Its fields are protected by Engine.mu.
type subscription struct {
	e      *Engine
	req    *proto.Message
	id     string
	caller string
	// authCtx keeps the values of the request's context (the remote
	// peer) for Reauthorize.
	authCtx context.Context
	q       *queue
	feeds   []*feed
	stop    func() bool
	ended   bool
}

// subscribe attaches a new subscriber for req to the feeds named by keys,
// starting the feeds that are not running.
func (e *Engine) subscribe(ctx context.Context, req *proto.Message, caller string, b Backend, keys []feedKey) Session {
	s := &subscription{e: e, req: req, id: req.Correlation(), caller: caller, authCtx: context.WithoutCancel(ctx), q: newQueue(e.cfg.QueueSize)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.reject(req, problem(http.StatusServiceUnavailable, TitleUnavailable, "the node is shutting down"))
	}
	if e.subs[s.id] != nil {
		return e.reject(req, problem(http.StatusConflict, TitleConflict, "a subscription with correlationID %q is open", s.id))
	}
	e.subs[s.id] = s
	for _, k := range keys {
		f := e.feeds[k]
		if f == nil {
			f = e.startFeedLocked(k, b)
		}
		f.subs[s] = struct{}{}
		s.feeds = append(s.feeds, f)
	}
	s.stop = context.AfterFunc(ctx, s.end)
	return s
}

func (e *Engine) startFeedLocked(k feedKey, b Backend) *feed {
	ctx, cancel := context.WithCancel(e.ctx)
	f := &feed{key: k, cancel: cancel, subs: map[*subscription]struct{}{}}
	e.feeds[k] = f
	e.wg.Add(1)
	go e.runFeed(ctx, f, b)
	return f
}

func (e *Engine) runFeed(ctx context.Context, f *feed, b Backend) {
	defer e.wg.Done()
	defer f.cancel()
	typ := proto.MsgObserveProperty
	if f.key.event {
		typ = proto.MsgSubscribeEvent
	}
	req := proto.NewMessage(f.key.thingID, typ)
	req.Name = f.key.name
	x := &Exchange{req: req, reply: func(m *proto.Message) error { return e.publish(f, req, m) }}
	err := callBackend(ctx, e.log, b, x)

	e.mu.Lock()
	defer e.mu.Unlock()
	f.ended = true
	if e.feeds[f.key] == f {
		delete(e.feeds, f.key)
	}
	for s := range f.subs {
		var final *proto.Message
		switch {
		case e.ctx.Err() != nil:
			final = newErrorMessage(s.req, http.StatusServiceUnavailable, TitleUnavailable, "the node is shutting down")
		case err != nil:
			final = errorMessage(s.req, err)
		default:
			final = newErrorMessage(s.req, http.StatusBadGateway, TitleBadGateway, "the Thing's backend ended the %s feed of %q", typ, f.key.name)
		}
		e.endSubLocked(s, final)
	}
}

// publish is Exchange.Reply of a feed: it fans m out to every subscriber.
func (e *Engine) publish(f *feed, req, m *proto.Message) error {
	if m == nil || !allowedReply(req, m.Type) {
		return fmt.Errorf("interact: a backend cannot answer %s with %v", req.Type, m)
	}
	m = m.Clone()
	e.complete(req, m)
	e.mu.Lock()
	defer e.mu.Unlock()
	if f.ended || len(f.subs) == 0 {
		return ErrSessionClosed
	}
	if m.Type == proto.MsgError {
		for s := range f.subs {
			e.endSubLocked(s, retarget(m, s))
		}
		return ErrSessionClosed
	}
	var dropped []*subscription
	for s := range f.subs {
		if !s.q.offer(retarget(m, s), func() *proto.Message { return slowConsumer(s.req, e.cfg.QueueSize) }) {
			dropped = append(dropped, s)
		}
	}
	for _, s := range dropped {
		e.log.Info("slow subscriber dropped", "subscription", s.req, "caller", s.caller)
		e.endSubLocked(s, nil)
	}
	return nil
}

// retarget returns m as sent to subscriber s: its own messageID and the
// subscription's correlationID.
func retarget(m *proto.Message, s *subscription) *proto.Message {
	c := m.Clone()
	c.MessageID = proto.NewMessage(c.ThingID, c.Type).MessageID
	c.CorrelationID = s.id
	c.Traceparent, c.Tracestate = s.req.Traceparent, s.req.Tracestate
	return c
}

func slowConsumer(req *proto.Message, n int) *proto.Message {
	return newErrorMessage(req, http.StatusServiceUnavailable, TitleUnavailable,
		"subscriber too slow: %d notifications were waiting unread; subscribe again", n)
}

// endSubLocked ends a subscription: delivers final (if not nil and there is
// room), closes its queue and detaches it from its feeds, cancelling feeds
// left without subscribers. Called with e.mu held.
func (e *Engine) endSubLocked(s *subscription, final *proto.Message) {
	if s.ended {
		return
	}
	s.ended = true
	s.q.endNow(final)
	if s.stop != nil {
		s.stop()
	}
	if e.subs[s.id] == s {
		delete(e.subs, s.id)
	}
	for _, f := range s.feeds {
		delete(f.subs, s)
		if len(f.subs) == 0 && !f.ended {
			f.cancel()
			if e.feeds[f.key] == f {
				delete(e.feeds, f.key)
			}
		}
	}
	s.feeds = nil
}

// end ends the subscription on the consumer's behalf.
func (s *subscription) end() {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.e.endSubLocked(s, nil)
}

// Request implements Session.
func (s *subscription) Request() *proto.Message { return s.req }

// Replies implements Session.
func (s *subscription) Replies() <-chan *proto.Message { return s.q.ch }

// Send implements Session: unsubscribeEvent, unsubscribeAllEvents or
// unobserveProperty end the subscription.
func (s *subscription) Send(_ context.Context, m *proto.Message) error {
	m = fillFromRequest(s.req, m)
	if !allowedInSession(s.req, m) {
		return fmt.Errorf("%w: %s in a %s session", ErrNotInSession, m.Type, s.req.Type)
	}
	s.end()
	return nil
}

// Close implements Session.
func (s *subscription) Close() error {
	s.end()
	return nil
}

// unsubscribe serves a standalone unsubscribeEvent, unsubscribeAllEvents or
// unobserveProperty: with a correlationID it ends that subscription, without
// one every matching subscription of the same caller on the Thing (the
// event or property named, or all for unsubscribeAllEvents).
func (e *Engine) unsubscribe(req *proto.Message, caller string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	match := func(s *subscription) bool {
		return s.caller == caller && s.req.ThingID == req.ThingID && req.Type.Unsubscribes(s.req.Type) &&
			(!req.Type.Named() || req.Name == s.req.Name)
	}
	if req.CorrelationID != "" {
		if s := e.subs[req.CorrelationID]; s != nil && s.caller == caller && s.req.ThingID == req.ThingID && req.Type.Unsubscribes(s.req.Type) {
			e.endSubLocked(s, nil)
		}
		return
	}
	for _, s := range e.subs {
		if match(s) {
			e.endSubLocked(s, nil)
		}
	}
}
