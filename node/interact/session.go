package interact

import (
	"context"
	"errors"
	"sync"

	"github.com/lmosnode/lmosnode/proto"
)

// Session is one interaction seen from its consumer: the request that opened
// it, the Thing's replies in order, and the further messages the consumer
// sends while it runs. The Engine (for the node's own Things) and the Client
// (for Things owned by another node, over libp2p) return Sessions, and
// every gateway (HTTP, WebSocket, MQTT, the libp2p Server) adapts one.
//
// Implementations are safe for concurrent use: one goroutine may range over
// Replies while others call Send and Close.
type Session interface {
	// Request returns the request that opened the session. The caller must
	// not modify it.
	Request() *proto.Message

	// Replies delivers the Thing's messages in the order the Thing sent
	// them. The channel is closed
	//
	//   - after the terminal message of the interaction (see
	//     proto.Message.Ends): an error, the final actionStatus of an
	//     invocation or session, the propertyReading of a read or write, …;
	//   - right after the consumer ended the interaction itself (an
	//     unsubscribeEvent, unsubscribeAllEvents or unobserveProperty sent
	//     with Send, or Close);
	//   - right away for a one-way request (proto.Message.OneWay) and for
	//     requests that have no reply (a standalone unsubscribe, streamInput
	//     or streamEnd).
	//
	// A failure of the Thing's backend, of the owner node or of the
	// transport in between arrives as an error message, so that a consumer
	// sees every interaction that it did not end itself end with exactly one
	// terminal message.
	Replies() <-chan *proto.Message

	// Send sends a further consumer message of the interaction: streamInput,
	// streamEnd, cancelAction or queryAction during an invocation;
	// unsubscribeEvent or unsubscribeAllEvents during a subscription;
	// unobserveProperty during an observation. Members left empty are
	// filled from the request: thingID, the affordance name, correlationID
	// (the request's Correlation) and a fresh messageID. Send may block
	// while the Thing is not keeping up with streamed input (back-pressure);
	// ctx bounds the wait. It fails with ErrSessionClosed once the session
	// is over.
	Send(ctx context.Context, m *proto.Message) error

	// Close ends the interaction from the consumer's side: a running
	// action is cancelled, a subscription or observation ends, the
	// transport's stream is released. Replies is closed soon after (without
	// a further message). Close may be called any number of times.
	Close() error
}

// Invoker opens interactions. The Engine, the Client bound to an owner
// (Client.Invoker) and the node's router (which picks one of the two by
// the Thing's owner) are Invokers, and the transports' servers serve any
// Invoker.
type Invoker interface {
	// Invoke opens the interaction that req starts. The session lasts
	// until its terminal message, until the consumer closes it, or until
	// ctx is done, whichever comes first: ctx scopes the whole interaction,
	// not only its start. Invoke fails only when the invoker is closed or
	// the request cannot be encoded; every other failure (including an
	// owner node that cannot be reached: 502) is an error message on the
	// session.
	Invoke(ctx context.Context, req *proto.Message) (Session, error)
}

// Errors of sessions.
var (
	// ErrSessionClosed: the session is over; nothing more can be sent.
	ErrSessionClosed = errors.New("interact: session closed")
	// ErrNotInSession: the message type cannot be sent within this kind of
	// session (for example streamInput to a subscription).
	ErrNotInSession = errors.New("interact: message not allowed in this session")
	// ErrNotAccepted: streamInput or streamEnd sent before the Thing
	// accepted the streaming session (with an actionStatus marked
	// "stream": true), or to an invocation the Thing did not accept as a
	// session.
	ErrNotAccepted = errors.New("interact: streaming session not accepted by the Thing")
)

// allowedInSession reports whether a consumer may send m within the
// session opened by req.
func allowedInSession(req, m *proto.Message) bool {
	switch {
	case req.Type == proto.MsgInvokeAction:
		return m.Type.FollowsAction()
	case req.Type.Subscribes():
		return m.Type.Unsubscribes(req.Type)
	}
	return false
}

// fillFromRequest completes a consumer message sent within the session of
// req: the members a consumer may leave empty.
func fillFromRequest(req, m *proto.Message) *proto.Message {
	m = m.Clone()
	if m.ThingID == "" {
		m.ThingID = req.ThingID
	}
	if m.MessageID == "" {
		m.MessageID = proto.NewMessage(req.ThingID, m.Type).MessageID
	}
	if m.CorrelationID == "" {
		m.CorrelationID = req.Correlation()
	}
	if m.Name == "" && m.Type.Named() {
		m.Name = req.Name
	}
	if m.Traceparent == "" {
		m.Traceparent, m.Tracestate = req.Traceparent, req.Tracestate
	}
	return m
}

// closedSession is a session that has already ended, with at most one
// message (an error, or nothing for one-way requests).
type closedSession struct {
	req *proto.Message
	out chan *proto.Message
}

func newClosedSession(req *proto.Message, final *proto.Message) *closedSession {
	s := &closedSession{req: req, out: make(chan *proto.Message, 1)}
	if final != nil {
		s.out <- final
	}
	close(s.out)
	return s
}

func (s *closedSession) Request() *proto.Message                    { return s.req }
func (s *closedSession) Replies() <-chan *proto.Message             { return s.out }
func (s *closedSession) Send(context.Context, *proto.Message) error { return ErrSessionClosed }
func (s *closedSession) Close() error                               { return nil }

// queue is the bounded, ordered reply queue of one session. It has one
// producer at a time and one consumer (the Replies channel).
//
// Producers either block while the queue is full (push: back-pressure on
// the producer, used for the replies of one consumer's own interaction) or
// give up (offer: used when one producer feeds many sessions, which a slow
// one must not hold up). The channel has one slot more than the queue's
// capacity, so that offer can always deliver the terminal error that tells
// a dropped subscriber why it was dropped.
type queue struct {
	ch       chan *proto.Message
	capacity int
	hook     endHook

	mu     sync.Mutex
	closed bool
}

// endHook tells, once, what the last message of a session's replies was
// when they end: Instrument observes sessions that have one (endNotifier)
// without a goroutine and a channel hop of its own per interaction.
type endHook struct {
	mu    sync.Mutex
	ended bool
	last  *proto.Message
	fn    func(last *proto.Message)
}

// endNotifier is a Session that calls fn once, when its replies end (right
// away if they have), with the last message it queued; false if it cannot.
type endNotifier interface {
	notifyEnd(fn func(last *proto.Message)) bool
}

// queued records m as the latest message.
func (h *endHook) queued(m *proto.Message) {
	h.mu.Lock()
	h.last = m
	h.mu.Unlock()
}

// end calls the registered function, once.
func (h *endHook) end() {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.ended = true
	fn, last := h.fn, h.last
	h.fn = nil
	h.mu.Unlock()
	if fn != nil {
		fn(last)
	}
}

func (h *endHook) notifyEnd(fn func(last *proto.Message)) bool {
	h.mu.Lock()
	if h.ended {
		last := h.last
		h.mu.Unlock()
		fn(last)
		return true
	}
	h.fn = fn
	h.mu.Unlock()
	return true
}

func (q *queue) notifyEnd(fn func(last *proto.Message)) bool { return q.hook.notifyEnd(fn) }

func newQueue(capacity int) *queue {
	return &queue{ch: make(chan *proto.Message, capacity+1), capacity: capacity}
}

// push delivers m, waiting while the queue is full until done is closed.
// It reports whether m was queued. It must not run concurrently with
// offer, end or another push: a queue has one producer at a time.
func (q *queue) push(done <-chan struct{}, m *proto.Message) bool {
	if q.isClosed() {
		return false
	}
	select {
	case q.ch <- m:
		q.hook.queued(m)
		return true
	case <-done:
		return false
	}
}

// offer delivers m if there is room. When the queue is full, it delivers
// overflow (built lazily) in the spare slot instead, closes the queue and
// returns false. Callers serialise offer and end (a queue fed by offer is
// fed under one lock).
func (q *queue) offer(m *proto.Message, overflow func() *proto.Message) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if len(q.ch) < q.capacity {
		q.ch <- m
		q.mu.Unlock()
		q.hook.queued(m)
		return true
	}
	last := overflow()
	q.ch <- last // the spare slot: only offer and end write, under q.mu
	q.closed = true
	close(q.ch)
	q.mu.Unlock()
	q.hook.queued(last)
	q.hook.end()
	return false
}

// end closes the queue after delivering final (if not nil and there is
// room; a queue fed by push makes room by waiting until done). It reports
// whether this call closed the queue.
func (q *queue) end(done <-chan struct{}, final *proto.Message) bool {
	if final != nil && !q.isClosed() {
		select {
		case q.ch <- final:
			q.hook.queued(final)
		case <-done:
		}
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.closed = true
	close(q.ch)
	q.mu.Unlock()
	q.hook.end()
	return true
}

// endNow closes the queue without waiting: final is delivered only if
// there is room. Callers serialise it with offer.
func (q *queue) endNow(final *proto.Message) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	queued := false
	if final != nil {
		select {
		case q.ch <- final:
			queued = true
		default:
		}
	}
	q.closed = true
	close(q.ch)
	q.mu.Unlock()
	if queued {
		q.hook.queued(final)
	}
	q.hook.end()
}

func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

func (i *interaction) notifyEnd(fn func(last *proto.Message)) bool {
	return i.q != nil && i.q.notifyEnd(fn)
}

func (s *replySession) notifyEnd(fn func(last *proto.Message)) bool { return s.q.notifyEnd(fn) }

func (s *subscription) notifyEnd(fn func(last *proto.Message)) bool { return s.q.notifyEnd(fn) }
