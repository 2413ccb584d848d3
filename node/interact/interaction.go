package interact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// errCancelRequested is the cause with which a cancelAction cancels an
// invocation's context.
var errCancelRequested = errors.New("interact: cancelAction")

// interaction is one call of a backend that answers one consumer:
// invokeAction (tracked for queryAction and cancelAction), readProperty,
// writeProperty and writeMultipleProperties. It is the Session of its
// consumer.
type interaction struct {
	e           *Engine
	req         *proto.Message
	id          string // the correlation: req.Correlation()
	caller      string
	authCtx     context.Context // the request's context values, for Reauthorize
	tracked     bool            // an invocation: kept for query and cancel
	inputSchema json.RawMessage // a streaming session's input schema

	q      *queue             // nil for one-way requests
	ctx    context.Context    // done when the consumer is gone
	cancel context.CancelFunc //
	stop   func() bool        // stops the AfterFunc on the consumer's ctx

	actCtx    context.Context // the backend's context: ctx, cancelAction, timeout
	actCancel context.CancelCauseFunc

	inputs chan proto.Value // a streaming session's input; nil otherwise
	done   chan struct{}    // closed when the backend call has returned and the final message is set

	pushMu sync.Mutex // serialises the producers of q (backend replies, in-session queries, the final message)
	sendMu sync.Mutex // serialises the consumer's streamInput and streamEnd

	mu          sync.Mutex
	last        *proto.Message // latest actionStatus or the final error
	final       bool           // the terminal message was sent
	accepted    bool           // the Thing accepted the streaming session
	inputClosed bool
	finishedAt  time.Time
}

// start starts the backend call for req and returns its session.
func (e *Engine) start(ctx context.Context, req *proto.Message, caller string, b Backend, inputSchema json.RawMessage) Session {
	i := &interaction{
		e:           e,
		req:         req,
		id:          req.Correlation(),
		caller:      caller,
		authCtx:     context.WithoutCancel(ctx),
		tracked:     req.Type == proto.MsgInvokeAction,
		inputSchema: inputSchema,
		done:        make(chan struct{}),
	}
	i.ctx, i.cancel = context.WithCancel(e.ctx)
	switch {
	case req.OneWay:
		i.stop = func() bool { return false } // a one-way action outlives its request
	case singleReply(req.Type):
		i.q = newQueue(1) // room for the one reply
		i.stop = context.AfterFunc(ctx, i.cancel)
	default:
		i.q = newQueue(e.cfg.QueueSize)
		i.stop = context.AfterFunc(ctx, i.cancel)
	}
	timeout := e.cfg.RequestTimeout
	if req.Type == proto.MsgInvokeAction {
		timeout = e.cfg.ActionTimeout
	}
	switch {
	case req.Type == proto.MsgInvokeAction:
		// cancelAction and an invalid input chunk cancel an invocation
		// with a cause of their own
		actCtx, actCancel := context.WithCancelCause(i.ctx)
		i.actCtx, i.actCancel = actCtx, actCancel
		if timeout > 0 {
			var cancelTimeout context.CancelFunc
			i.actCtx, cancelTimeout = context.WithTimeoutCause(actCtx, timeout, &timeoutCause{req: req, timeout: timeout})
			i.actCancel = func(cause error) { actCancel(cause); cancelTimeout() }
		}
	case timeout > 0:
		// a property request ends only by its consumer or its timeout
		var cancelTimeout context.CancelFunc
		i.actCtx, cancelTimeout = context.WithTimeoutCause(i.ctx, timeout, &timeoutCause{req: req, timeout: timeout})
		i.actCancel = func(error) { cancelTimeout() }
	default:
		i.actCtx, i.actCancel = i.ctx, func(error) {}
	}
	if req.Type == proto.MsgInvokeAction && req.Stream {
		i.inputs = make(chan proto.Value, e.cfg.InputQueueSize)
	}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		i.release()
		return e.reject(req, problem(http.StatusServiceUnavailable, TitleUnavailable, "the node is shutting down"))
	}
	if i.tracked {
		if old := e.actions[i.id]; old != nil && !old.isFinished() {
			e.mu.Unlock()
			i.release()
			return e.reject(req, problem(http.StatusConflict, TitleConflict, "an invocation with correlationID %q is running", i.id))
		}
		e.actions[i.id] = i
	}
	e.wg.Add(1)
	e.mu.Unlock()
	if i.q != nil && isInline(ctx) && singleReply(req.Type) {
		// the caller waits for the reply and does nothing else meanwhile:
		// run the backend here, not on a goroutine of its own
		i.run(b)
		return i
	}
	go i.run(b)
	if i.q == nil {
		return newClosedSession(req, nil)
	}
	return i
}

type inlineKey struct{}

// withInline marks ctx as the context of a request whose caller has
// nothing to do until the reply but wait for it, and nothing to send
// within the interaction: the libp2p Server, for a request that came with
// the consumer's end of the interaction. Its Invoke may then block until
// the reply is queued.
func withInline(ctx context.Context) context.Context {
	return context.WithValue(ctx, inlineKey{}, true)
}

func isInline(ctx context.Context) bool {
	v, _ := ctx.Value(inlineKey{}).(bool)
	return v
}

// singleReply reports whether a request of type t gets exactly one reply
// from the Thing (its terminal message), which the queue always has room
// for: an Engine may then run the backend call on the caller's goroutine
// (see withInline).
func singleReply(t proto.MessageType) bool {
	switch t {
	case proto.MsgReadProperty, proto.MsgWriteProperty, proto.MsgWriteMultipleProperties:
		return true
	}
	return false
}

// timeoutCause is the cause with which RequestTimeout or ActionTimeout
// ends an interaction: the 504 problem, built only when a timeout happens
// (every interaction has one, few time out).
type timeoutCause struct {
	req     *proto.Message
	timeout time.Duration
}

func (c *timeoutCause) problem() *proto.Problem {
	return problem(http.StatusGatewayTimeout, TitleTimeout, "the Thing did not finish %s %q within %s", c.req.Type, c.req.Name, c.timeout)
}

func (c *timeoutCause) Error() string { return c.problem().Error() }

// As lets errors.As find the problem.
func (c *timeoutCause) As(target any) bool {
	if p, ok := target.(**proto.Problem); ok {
		*p = c.problem()
		return true
	}
	return false
}

func (i *interaction) release() {
	i.stop()
	i.actCancel(nil)
	i.cancel()
}

func (i *interaction) run(b Backend) {
	defer i.e.wg.Done()
	x := &Exchange{req: i.req, inputs: i.inputs, reply: i.reply}
	err := callBackend(i.actCtx, i.e.log, b, x)
	i.finish(err)
	close(i.done)
}

// Request implements Session.
func (i *interaction) Request() *proto.Message { return i.req }

// Replies implements Session.
func (i *interaction) Replies() <-chan *proto.Message { return i.q.ch }

// Close implements Session: the consumer is gone, the backend call is
// cancelled.
func (i *interaction) Close() error {
	i.cancel()
	return nil
}

// Send implements Session.
func (i *interaction) Send(ctx context.Context, m *proto.Message) error {
	m = fillFromRequest(i.req, m)
	if !allowedInSession(i.req, m) {
		return fmt.Errorf("%w: %s in a %s session", ErrNotInSession, m.Type, i.req.Type)
	}
	if i.ctx.Err() != nil || i.isFinished() {
		return ErrSessionClosed
	}
	switch m.Type {
	case proto.MsgCancelAction:
		i.actCancel(errCancelRequested)
		return nil
	case proto.MsgQueryAction:
		i.pushMu.Lock()
		defer i.pushMu.Unlock()
		i.mu.Lock()
		final := i.final
		i.mu.Unlock()
		if final {
			return ErrSessionClosed
		}
		if !i.q.push(i.ctx.Done(), i.statusFor(m)) {
			return ErrSessionClosed
		}
		return nil
	}
	return i.feed(ctx, m)
}

// feed passes a streamInput chunk to the backend or ends the input.
func (i *interaction) feed(ctx context.Context, m *proto.Message) error {
	i.sendMu.Lock()
	defer i.sendMu.Unlock()
	i.mu.Lock()
	accepted, closed := i.accepted, i.inputClosed
	if accepted && !closed && m.Type == proto.MsgStreamEnd {
		i.inputClosed = true
		close(i.inputs)
	}
	i.mu.Unlock()
	switch {
	case i.inputs == nil || !accepted:
		return ErrNotAccepted
	case closed:
		return fmt.Errorf("%w: input already ended", ErrSessionClosed)
	case m.Type == proto.MsgStreamEnd:
		return nil
	}
	if err := i.e.schemas.validateValue(i.inputSchema, m.Input, "input"); err != nil {
		i.actCancel(err) // the Thing ends the session with the 400
		return nil
	}
	select {
	case i.inputs <- m.Input:
		return nil
	case <-i.actCtx.Done():
		return ErrSessionClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// allowedReply reports whether a backend may answer req with a message of
// type t: an error or req's reply type.
func allowedReply(req *proto.Message, t proto.MessageType) bool {
	return t == proto.MsgError || t == req.Type.ReplyType()
}

// complete fills what a backend may leave empty in a reply to req and
// forces the members that tie it to req.
func (e *Engine) complete(req, m *proto.Message) {
	m.ThingID = req.ThingID
	m.CorrelationID = req.Correlation()
	if m.MessageID == "" {
		m.MessageID = proto.NewMessage(req.ThingID, m.Type).MessageID
	}
	if m.Name == "" && m.Type.Named() {
		m.Name = req.Name
	}
	if m.Traceparent == "" {
		m.Traceparent, m.Tracestate = req.Traceparent, req.Tracestate
	}
	switch m.Type {
	case proto.MsgPropertyReading, proto.MsgPropertyReadings, proto.MsgEvent:
		if m.Timestamp == "" {
			m.Timestamp = proto.FormatTimestamp(e.now())
		}
	case proto.MsgError:
		if m.Status == "" {
			m.Status = "500"
		}
	}
	if m.Type == proto.MsgPropertyReading && !m.Value.Present() {
		m.Value = proto.Null
	}
	if m.Type == proto.MsgEvent && !m.Data.Present() {
		m.Data = proto.Null
	}
}

// reply is Exchange.Reply of an interaction.
func (i *interaction) reply(m *proto.Message) error {
	if m == nil || !allowedReply(i.req, m.Type) {
		return fmt.Errorf("interact: a backend cannot answer %s with %v", i.req.Type, m)
	}
	m = m.Clone()
	i.e.complete(i.req, m)
	i.pushMu.Lock()
	defer i.pushMu.Unlock()
	i.mu.Lock()
	// once cancelled (cancelAction, timeout, an invalid input chunk, the
	// consumer gone) the engine says how the interaction ended
	if i.final || i.actCtx.Err() != nil {
		i.mu.Unlock()
		return ErrSessionClosed
	}
	if m.Type == proto.MsgActionStatus {
		if m.Stream && i.req.Stream {
			i.accepted = true
		}
		m.Stream = i.accepted
	}
	if m.Type == proto.MsgActionStatus || m.Type == proto.MsgError {
		i.last = m
	}
	if m.Ends(i.req) {
		i.final = true
	}
	i.mu.Unlock()
	if i.q == nil {
		return nil // one-way: nothing goes back
	}
	if !i.q.push(i.ctx.Done(), m) {
		return ErrSessionClosed
	}
	return nil
}

// finish sends the terminal message if the backend did not, and ends the
// session.
func (i *interaction) finish(err error) {
	i.pushMu.Lock()
	i.mu.Lock()
	var final *proto.Message
	if !i.final {
		i.final = true
		final = i.finalFor(err)
		if final.Type == proto.MsgActionStatus || final.Type == proto.MsgError {
			i.last = final
		}
	} else if err != nil && !errors.Is(err, ErrSessionClosed) {
		i.e.log.Debug("backend failed after its final reply", "request", i.req, "err", err)
	}
	i.finishedAt = i.e.now()
	i.mu.Unlock()
	if i.q != nil {
		i.q.end(i.ctx.Done(), final)
	}
	i.pushMu.Unlock()
	i.release()
	if i.tracked {
		i.e.retire(i)
	}
}

// finalFor is the terminal message of an interaction whose backend
// returned err without sending one. Called with i.mu held.
func (i *interaction) finalFor(err error) *proto.Message {
	cause := context.Cause(i.actCtx)
	var p *proto.Problem
	switch {
	case errors.Is(cause, errCancelRequested), i.ctx.Err() != nil && i.req.Type == proto.MsgInvokeAction:
		// cancelled by the consumer (cancelAction), or the consumer left:
		// then the message reaches no one but queryAction.
		m := i.req.Reply(proto.MsgActionStatus)
		m.Status, m.Stream = proto.ActionCancelled, i.accepted
		return m
	case errors.As(cause, &p): // a timeout, an invalid input chunk
		return errorMessage(i.req, p)
	case i.ctx.Err() != nil:
		return newErrorMessage(i.req, StatusClientClosed, TitleCancelled, "the interaction was abandoned")
	case err != nil:
		return errorMessage(i.req, err)
	}
	switch i.req.Type {
	case proto.MsgInvokeAction:
		m := i.req.Reply(proto.MsgActionStatus)
		m.Status, m.Stream = proto.ActionCompleted, i.accepted
		return m
	case proto.MsgWriteProperty:
		m := i.req.Reply(proto.MsgPropertyReading)
		m.Value = i.req.Data
		i.e.complete(i.req, m)
		return m
	}
	return newErrorMessage(i.req, http.StatusBadGateway, TitleBadGateway, "the Thing's backend returned no %s", i.req.Type.ReplyType())
}

func (i *interaction) isFinished() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return !i.finishedAt.IsZero()
}

// statusFor returns the actionStatus answering a queryAction or
// cancelAction q: the latest status the Thing reported (pending before the
// first). In a streaming session a running status carries no output (its
// output was a chunk, already delivered).
func (i *interaction) statusFor(q *proto.Message) *proto.Message {
	i.mu.Lock()
	last, accepted := i.last, i.accepted
	i.mu.Unlock()
	if last != nil && last.Type == proto.MsgError {
		m := last.Clone()
		r := q.Reply(proto.MsgError)
		m.MessageID, m.CorrelationID = r.MessageID, r.CorrelationID
		return m
	}
	m := q.Reply(proto.MsgActionStatus)
	m.Name = i.req.Name
	m.Status = proto.ActionPending
	if last != nil {
		m.Status, m.Output = last.Status, last.Output
		if accepted && !last.EndsAction() {
			m.Output = proto.Value{}
		}
	}
	m.Stream = accepted
	return m
}

// retire keeps a finished invocation for queryAction and forgets the
// oldest beyond the retention limits.
func (e *Engine) retire(i *interaction) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.retired = append(e.retired, i)
	e.purgeLocked()
}

func (e *Engine) purgeLocked() {
	now := e.now()
	n := 0
	for n < len(e.retired) {
		r := e.retired[n]
		if len(e.retired)-n <= e.cfg.MaxRetainedActions && now.Sub(r.finishedAtLocked()) < e.cfg.ActionRetention {
			break
		}
		if e.actions[r.id] == r {
			delete(e.actions, r.id)
		}
		n++
	}
	e.retired = e.retired[n:]
}

func (i *interaction) finishedAtLocked() time.Time {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.finishedAt
}

// toAction serves the messages that name a running or finished invocation
// by its correlationID: queryAction, cancelAction, and streamInput and
// streamEnd sent outside the session (by message-oriented transports).
func (e *Engine) toAction(ctx context.Context, req *proto.Message, caller string) Session {
	if req.CorrelationID == "" {
		return e.reject(req, problem(http.StatusBadRequest, TitleBadRequest, "%s needs the correlationID of the invocation", req.Type))
	}
	e.mu.Lock()
	e.purgeLocked()
	i := e.actions[req.CorrelationID]
	e.mu.Unlock()
	if i == nil || i.caller != caller || i.req.ThingID != req.ThingID || (req.Name != "" && req.Name != i.req.Name) {
		return e.reject(req, problem(http.StatusNotFound, TitleActionNotFound, "Thing %q has no invocation with correlationID %q", req.ThingID, req.CorrelationID))
	}
	switch req.Type {
	case proto.MsgQueryAction:
		return newClosedSession(req, i.statusFor(req))
	case proto.MsgCancelAction:
		i.actCancel(errCancelRequested)
		q := newQueue(1)
		s := &replySession{req: req, q: q}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return e.reject(req, problem(http.StatusServiceUnavailable, TitleUnavailable, "the node is shutting down"))
		}
		e.wg.Add(1)
		e.mu.Unlock()
		go func() {
			defer e.wg.Done()
			t := time.NewTimer(e.cfg.RequestTimeout)
			defer t.Stop()
			select {
			case <-i.done:
			case <-t.C:
			case <-e.ctx.Done():
			}
			q.end(nil, i.statusFor(req))
		}()
		return s
	}
	if err := i.Send(ctx, req); err != nil {
		e.log.Debug("stream message refused", "request", req, "err", err)
	}
	return newClosedSession(req, nil)
}

// replySession is a session with one reply produced in the background.
type replySession struct {
	req *proto.Message
	q   *queue
}

func (s *replySession) Request() *proto.Message                    { return s.req }
func (s *replySession) Replies() <-chan *proto.Message             { return s.q.ch }
func (s *replySession) Send(context.Context, *proto.Message) error { return ErrNotInSession }
func (s *replySession) Close() error                               { return nil }
