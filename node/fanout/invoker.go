package fanout

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Invoker is the interact.Invoker of the Things of one other node (Owner)
// with events fanned out: it serves subscribeEvent and subscribeAllEvents
// from the Things' topics through Fanout and passes every other request,
// and subscriptions the Fanout refuses (Things restricted to groups,
// unknown Things), to Remote, the per-interaction stream to the owner
// (interact.Client.Invoker(Owner)). The owner's node learns nothing per
// subscriber but one short probe: for Config.Probe after each subscription
// the adapter also sends it to the owner through Remote, and an error the
// owner answers with (its backend's 404, say) ends the subscription with
// that error, so the subscriber is not left on a silent topic. A gateway uses it unchanged: the router builds one where it
// would use Client.Invoker(owner).
type Invoker struct {
	Owner  peer.ID
	Remote interact.Invoker
	Fanout *Fanout
}

var _ interact.Invoker = (*Invoker)(nil)

// Invoke implements interact.Invoker.
func (iv *Invoker) Invoke(ctx context.Context, req *lmosproto.Message) (interact.Session, error) {
	if iv.Fanout == nil || req.OneWay || req.Type.ReplyType() != lmosproto.MsgEvent {
		return iv.Remote.Invoke(ctx, req)
	}
	s := &session{req: req}
	c, err := iv.Fanout.subscribe(ctx, iv.Owner, req, s.retarget)
	switch {
	case errors.Is(err, ErrClosed):
		return nil, err
	case err != nil:
		return iv.Remote.Invoke(ctx, req)
	}
	s.c = c
	iv.Fanout.probe(ctx, iv.Remote, req, c)
	return s, nil
}

// session is a subscription served from a topic.
type session struct {
	req *lmosproto.Message
	c   *consumer
}

// retarget gives an event the subscription's correlationID and trace
// context and a fresh messageID, as the Engine does for its subscribers.
func (s *session) retarget(m *lmosproto.Message) *lmosproto.Message {
	m.MessageID = lmosproto.NewMessage(m.ThingID, m.Type).MessageID
	m.CorrelationID = s.req.Correlation()
	m.Traceparent, m.Tracestate = s.req.Traceparent, s.req.Tracestate
	return m
}

// Request implements interact.Session.
func (s *session) Request() *lmosproto.Message { return s.req }

// Replies implements interact.Session.
func (s *session) Replies() <-chan *lmosproto.Message { return s.c.ch }

// Send implements interact.Session: an unsubscribe that matches the
// subscription (lmosproto.MessageType.Unsubscribes) ends it; any other
// message is refused with interact.ErrNotInSession.
func (s *session) Send(_ context.Context, m *lmosproto.Message) error {
	if !m.Type.Unsubscribes(s.req.Type) {
		return fmt.Errorf("%w: %s in a %s session", interact.ErrNotInSession, m.Type, s.req.Type)
	}
	s.c.cancel()
	return nil
}

// Close implements interact.Session.
func (s *session) Close() error {
	s.c.cancel()
	return nil
}
