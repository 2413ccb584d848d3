package interact

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/lmosnode/lmosnode/proto"
)

// Things gives the engine the Thing Descriptions of the node's own Things.
// The node's directory implements it. TD must be safe for concurrent use;
// the engine never modifies the TD it gets.
type Things interface {
	// TD returns the current TD of the Thing with this id, false when the
	// node does not own such a Thing.
	TD(thingID string) (*proto.TD, bool)
}

// ThingsFunc adapts a function to Things.
type ThingsFunc func(thingID string) (*proto.TD, bool)

// TD calls f.
func (f ThingsFunc) TD(thingID string) (*proto.TD, bool) { return f(thingID) }

// Backend serves the interactions of one Thing: the organisation's HTTP
// service (NewHTTPBackend), handlers in a Go program (Thing), or an agent
// connected to the node.
//
// The engine checks every request before the backend sees it (the Thing
// and the affordance exist, the operation is allowed, input and written
// values match the TD's data schemas) and calls Handle with one of these
// requests, each in its own goroutine:
//
//	readProperty     reply one propertyReading (Exchange.Reading)
//	writeProperty    optionally reply one propertyReading with the value now
//	                 held; returning nil without one answers with the
//	                 written value (writeMultipleProperties arrives as one
//	                 writeProperty per property, in the order of the names)
//	invokeAction     reply any number of actionStatus pending/running and
//	                 at most one final one (completed, failed); returning
//	                 nil without a final status completes the action without
//	                 output. With "stream": true, call Exchange.Accept to take
//	                 the request as a streaming session, read Exchange.Inputs
//	                 and send output chunks with Exchange.Status(running, …)
//	observeProperty  reply a propertyReading on every change until ctx is
//	                 done; the engine makes one such call per property and
//	                 shares it between all observers
//	subscribeEvent   reply an event (Exchange.Event) on every occurrence
//	                 until ctx is done; one call per event, shared by all
//	                 subscribers (subscribeAllEvents arrives as one
//	                 subscribeEvent per event of the TD)
//
// ctx is cancelled when the interaction ends: cancelAction, the consumer
// gone, the last observer or subscriber gone, a timeout, the engine
// closing. A Handle that returns an error ends the interaction with an
// error message: a *proto.Problem (possibly wrapped) keeps its status and
// title, context.DeadlineExceeded becomes 504, anything else 500. A panic
// in Handle is recovered and answered with 500. Handle must be safe for
// concurrent use.
type Backend interface {
	Handle(ctx context.Context, x *Exchange) error
}

// BackendFunc adapts a function to Backend.
type BackendFunc func(ctx context.Context, x *Exchange) error

// Handle calls f.
func (f BackendFunc) Handle(ctx context.Context, x *Exchange) error { return f(ctx, x) }

// Exchange is one call of a Backend: the request and the way back.
// Its methods are safe for concurrent use, but replies are delivered in the
// order the calls to Reply return.
type Exchange struct {
	req    *proto.Message
	inputs <-chan proto.Value
	reply  func(*proto.Message) error
}

// Request returns the request. The backend must not modify it.
func (x *Exchange) Request() *proto.Message { return x.req }

// Reply sends a reply. The engine fills what the backend leaves empty
// (thingID, correlationID, the affordance name, messageID, the timestamp of
// readings and events) and checks that the type answers the request.
// Reply blocks while the consumer's queue is full (back-pressure), except
// for observations and events, whose replies are never held up by a slow
// consumer (see the package documentation). It fails with ErrSessionClosed
// once the interaction is over (after a final status, after the consumer
// left): the backend should then return.
func (x *Exchange) Reply(m *proto.Message) error { return x.reply(m) }

// Status sends an actionStatus with status (proto.ActionPending, …) and
// optional output.
func (x *Exchange) Status(status string, output proto.Value) error {
	m := x.req.Reply(proto.MsgActionStatus)
	m.Status, m.Output = status, output
	return x.reply(m)
}

// Accept accepts a streaming session (an invokeAction with "stream":
// true): it sends the first actionStatus marked "stream": true (status
// running, no output). The engine marks every later actionStatus of the
// session. Only after Accept does the consumer stream input.
func (x *Exchange) Accept() error {
	m := x.req.Reply(proto.MsgActionStatus)
	m.Status, m.Stream = proto.ActionRunning, true
	return x.reply(m)
}

// Inputs returns the input chunks of a streaming session, the input of
// each streamInput message in order; the channel is closed at streamEnd. It
// is nil for other requests.
func (x *Exchange) Inputs() <-chan proto.Value { return x.inputs }

// Reading sends a propertyReading with value v.
func (x *Exchange) Reading(v proto.Value) error {
	m := x.req.Reply(proto.MsgPropertyReading)
	m.Value = v
	return x.reply(m)
}

// Event sends an event notification with data.
func (x *Exchange) Event(data proto.Value) error {
	m := x.req.Reply(proto.MsgEvent)
	m.Data = data
	return x.reply(m)
}

// callBackend calls b.Handle and turns a panic into a 500 problem; the
// stack goes to the log, not to the consumer.
func callBackend(ctx context.Context, log *slog.Logger, b Backend, x *Exchange) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("backend panicked", "request", x.req, "panic", r, "stack", string(debug.Stack()))
			err = problem(http.StatusInternalServerError, TitleInternal, "the Thing's backend panicked: %v", r)
		}
	}()
	if err := b.Handle(ctx, x); err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	return nil
}
