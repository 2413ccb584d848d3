package interact

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lmosnode/lmosnode/proto"
)

// Sides of an instrumented Invoker (Instrument).
const (
	// SideConsumer: the Invoker opens interactions for this node's
	// consumers; its spans are clients of the Thing.
	SideConsumer = "consumer"
	// SideOwner: the Invoker serves this node's own Things; its spans are
	// servers.
	SideOwner = "owner"
)

// Instrumentation observes the interactions an Invoker opens (Instrument).
// Both fields are optional.
type Instrumentation struct {
	// Tracer starts one span per interaction, from the request to its
	// terminal message. Its parent is the request's traceparent, or the
	// span in the Invoke context when that continues the same trace (or
	// the request has none); the request then
	// carries the new span's context on (the message's traceparent
	// member), so that the owner node and the Thing's HTTP backend
	// continue the same trace.
	Tracer trace.Tracer
	// Ended is called once per interaction when it ends: with the request
	// type as operation, the status (the problem status of an error
	// message; 200 for any other end, including a subscription the
	// consumer ended; 202 for a one-way request; 499 for an interaction
	// the consumer closed before its terminal message) and its duration.
	Ended func(side, transport, operation string, status int, d time.Duration)
}

// traceContext is W3C Trace Context, the format of the LMOS envelope's
// traceparent and tracestate members.
var traceContext propagation.TraceContext

// Instrument returns an Invoker that opens interactions with inv and
// reports them to ins; side and transport label them. With neither field
// of ins set it returns inv.
//
// Each session of an instrumented Invoker forwards the replies of inv's
// session through one goroutine, which ends when that session's replies
// end (after its terminal message or Close).
func Instrument(inv Invoker, side, transport string, ins Instrumentation) Invoker {
	if ins.Tracer == nil && ins.Ended == nil {
		return inv
	}
	return &instrumented{inv: inv, side: side, transport: transport, ins: ins}
}

type instrumented struct {
	inv             Invoker
	side, transport string
	ins             Instrumentation
}

// Invoke implements Invoker.
func (o *instrumented) Invoke(ctx context.Context, req *proto.Message) (Session, error) {
	start := time.Now()
	var span trace.Span
	if o.ins.Tracer != nil {
		ctx, span, req = o.startSpan(ctx, req)
	}
	sess, err := o.inv.Invoke(ctx, req)
	if err != nil {
		if span != nil {
			span.SetStatus(codes.Error, err.Error())
			span.End()
		}
		o.ended(req, http.StatusServiceUnavailable, start)
		return nil, err
	}
	report := func(status int) {
		if span != nil {
			span.SetAttributes(attribute.Int("lmos.status", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		o.ended(req, status, start)
	}
	if n, ok := sess.(endNotifier); ok {
		// the session says when its replies end: no forwarding needed
		s := &notifiedSession{Session: sess}
		if n.notifyEnd(func(last *proto.Message) { report(endStatus(req, last, s.closed.Load())) }) {
			return s, nil
		}
	}
	s := &observedSession{Session: sess, out: make(chan *proto.Message), done: make(chan struct{})}
	go s.forward(ctx, report)
	return s, nil
}

// notifiedSession is a Session whose end its endNotifier reports; it
// only notes whether the consumer closed it.
type notifiedSession struct {
	Session
	closed atomic.Bool
}

func (s *notifiedSession) Close() error {
	s.closed.Store(true)
	return s.Session.Close()
}

func (o *instrumented) ended(req *proto.Message, status int, start time.Time) {
	if o.ins.Ended != nil {
		o.ins.Ended(o.side, o.transport, string(req.Type), status, time.Since(start))
	}
}

// startSpan starts the interaction's span and returns req (a copy when
// it changed) carrying the span's trace context.
func (o *instrumented) startSpan(ctx context.Context, req *proto.Message) (context.Context, trace.Span, *proto.Message) {
	// The request's own trace wins over the context's when they differ:
	// a WebSocket session's context carries the span of its upgrade
	// request, each of its messages its own traceparent. When they agree
	// (the HTTP binding: the API span continues the request's header) the
	// context's span, the nearer one, is the parent.
	if req.Traceparent != "" {
		remote := trace.SpanContextFromContext(traceContext.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": req.Traceparent, "tracestate": req.Tracestate}))
		if local := trace.SpanContextFromContext(ctx); remote.IsValid() && (!local.IsValid() || local.TraceID() != remote.TraceID()) {
			ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
		}
	}
	kind := trace.SpanKindClient
	if o.side == SideOwner {
		kind = trace.SpanKindServer
	}
	ctx, span := o.ins.Tracer.Start(ctx, "lmos "+string(req.Type), trace.WithSpanKind(kind),
		trace.WithAttributes(
			attribute.String("lmos.thing_id", req.ThingID),
			attribute.String("lmos.name", req.Name),
			attribute.String("lmos.transport", o.transport),
		))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	if tp := carrier["traceparent"]; tp != "" && tp != req.Traceparent {
		req = req.Clone()
		req.Traceparent, req.Tracestate = tp, carrier["tracestate"]
	}
	return ctx, span, req
}

// observedSession is a Session whose replies pass through forward, which
// sees the terminal message.
type observedSession struct {
	Session
	out       chan *proto.Message
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (s *observedSession) Replies() <-chan *proto.Message { return s.out }

func (s *observedSession) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return s.Session.Close()
}

// forward passes the replies on until the inner session's end (after
// Close or the end of ctx, draining what the consumer no longer reads)
// and reports the interaction's status to ended.
func (s *observedSession) forward(ctx context.Context, ended func(status int)) {
	defer close(s.out)
	req := s.Request()
	var last *proto.Message
	for m := range s.Session.Replies() {
		last = m
		select {
		case s.out <- m:
		case <-s.done:
		case <-ctx.Done(): // the consumer is gone; so is the inner session soon
		}
	}
	ended(endStatus(req, last, s.closed()))
}

func (s *observedSession) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// endStatus is the status Instrumentation.Ended reports.
func endStatus(req, last *proto.Message, closed bool) int {
	switch {
	case last != nil && last.Type == proto.MsgError:
		if p := last.Problem(); p.Status != 0 {
			return p.Status
		}
		return http.StatusInternalServerError
	case last != nil && last.Ends(req):
		return http.StatusOK
	case !req.ExpectsReply():
		return http.StatusAccepted
	case req.Type.Subscribes():
		return http.StatusOK
	case closed:
		return 499
	}
	return http.StatusOK
}

// InstrumentRemote returns a Remote whose Invokers are r's, instrumented
// as Instrument does.
func InstrumentRemote(r Remote, side, transport string, ins Instrumentation) Remote {
	if ins.Tracer == nil && ins.Ended == nil {
		return r
	}
	return instrumentedRemote{r: r, side: side, transport: transport, ins: ins}
}

type instrumentedRemote struct {
	r               Remote
	side, transport string
	ins             Instrumentation
}

func (r instrumentedRemote) Invoker(owner peer.ID) Invoker {
	return Instrument(r.r.Invoker(owner), r.side, r.transport, r.ins)
}

// InstrumentRouter returns a Router that routes as r does and whose
// Invokers (For, and Invoke through them) are instrumented as Instrument
// does: a gateway that resolves the publisher itself and calls For is
// reported under its own transport. Invoke's refusals (an unknown Thing)
// open no interaction and are not reported.
func InstrumentRouter(r *Router, side, transport string, ins Instrumentation) *Router {
	return &Router{
		self:   r.self,
		local:  Instrument(r.local, side, transport, ins),
		remote: InstrumentRemote(r.remote, side, transport, ins),
		owners: r.owners,
	}
}
