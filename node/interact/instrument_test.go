package interact

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lmosnode/lmosnode/proto"
)

// recordingInvoker answers every request with final (nil: no message) and
// keeps the requests it got.
type recordingInvoker struct {
	final func(req *proto.Message) *proto.Message
	got   []*proto.Message
}

func (r *recordingInvoker) Invoke(_ context.Context, req *proto.Message) (Session, error) {
	r.got = append(r.got, req)
	return newClosedSession(req, r.final(req)), nil
}

type ended struct {
	side, transport, op string
	status              int
}

// TestInstrument checks what an instrumented Invoker reports per ended
// interaction, that its span continues the request's traceparent, and
// that the request handed on carries the span's context.
func TestInstrument(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var mu sync.Mutex
	var got []ended
	ins := Instrumentation{Tracer: tp.Tracer("test"), Ended: func(side, transport, op string, status int, _ time.Duration) {
		mu.Lock()
		got = append(got, ended{side, transport, op, status})
		mu.Unlock()
	}}

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name  string
		req   *proto.Message
		final func(req *proto.Message) *proto.Message
		want  int
	}{
		{"reading", &proto.Message{ThingID: "urn:x", MessageID: "m1", Type: proto.MsgReadProperty, Name: "t", Traceparent: caller},
			func(req *proto.Message) *proto.Message { return req.Reply(proto.MsgPropertyReading) }, http.StatusOK},
		{"error", &proto.Message{ThingID: "urn:x", MessageID: "m2", Type: proto.MsgReadProperty, Name: "t", Traceparent: caller},
			func(req *proto.Message) *proto.Message {
				return newErrorMessage(req, http.StatusNotFound, TitleThingNotFound, "no")
			}, http.StatusNotFound},
		{"one-way", &proto.Message{ThingID: "urn:x", MessageID: "m3", Type: proto.MsgInvokeAction, Name: "a", OneWay: true, Traceparent: caller},
			func(*proto.Message) *proto.Message { return nil }, http.StatusAccepted},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			inner := &recordingInvoker{final: c.final}
			inv := Instrument(inner, SideOwner, "libp2p", ins)
			sess, err := inv.Invoke(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			for range sess.Replies() {
			}
			_ = sess.Close()
			mu.Lock()
			defer mu.Unlock()
			if want := (ended{SideOwner, "libp2p", string(c.req.Type), c.want}); len(got) != 1 || got[0] != want {
				t.Errorf("ended %v, want [%v]", got, want)
			}
			if c.req.Traceparent != caller {
				t.Errorf("the caller's request was changed: %q", c.req.Traceparent)
			}
			handed := inner.got[0].Traceparent
			spans := exp.GetSpans()
			last := spans[len(spans)-1]
			if last.SpanKind != trace.SpanKindServer || last.Parent.SpanID().String() != "00f067aa0ba902b7" || last.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Errorf("span %q kind %v parent %v trace %v: want a server span continuing the caller", last.Name, last.SpanKind, last.Parent.SpanID(), last.SpanContext.TraceID())
			}
			if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + last.SpanContext.SpanID().String() + "-01"; handed != want {
				t.Errorf("request handed on with traceparent %q, want %q", handed, want)
			}
		})
	}
}

// TestInstrumentParent checks which parent a consumer span takes: the
// Invoke context's span when it continues the request's trace, the
// request's traceparent when the context's span belongs to another trace
// (a WebSocket session's upgrade request).
func TestInstrumentParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	inv := Instrument(&recordingInvoker{final: func(req *proto.Message) *proto.Message { return req.Reply(proto.MsgPropertyReading) }},
		SideConsumer, "websocket", Instrumentation{Tracer: tp.Tracer("test")})
	const (
		msgTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		msgSpan  = "00f067aa0ba902b7"
	)
	for _, c := range []struct {
		name      string
		ctxTrace  string
		wantTrace string
		fromCtx   bool
	}{
		{"same trace: the context's span", msgTrace, msgTrace, true},
		{"other trace: the message's", "0af7651916cd43dd8448eb211c80319c", msgTrace, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tid, _ := trace.TraceIDFromHex(c.ctxTrace)
			sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
			ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
			req := &proto.Message{ThingID: "urn:x", MessageID: "m", Type: proto.MsgReadProperty, Name: "t", Traceparent: "00-" + msgTrace + "-" + msgSpan + "-01"}
			sess, err := inv.Invoke(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for range sess.Replies() {
			}
			_ = sess.Close()
			spans := exp.GetSpans()
			last := spans[len(spans)-1]
			wantParent := msgSpan
			if c.fromCtx {
				wantParent = "b7ad6b7169203331"
			}
			if last.SpanContext.TraceID().String() != c.wantTrace || last.Parent.SpanID().String() != wantParent {
				t.Errorf("span in trace %s with parent %s, want trace %s, parent %s", last.SpanContext.TraceID(), last.Parent.SpanID(), c.wantTrace, wantParent)
			}
		})
	}
}

// TestInstrumentEndNotifier checks the status reported for sessions that
// tell their end themselves (the Engine's, the Client's), which Instrument
// observes without forwarding their replies: a reading, an error, and an
// invocation the consumer closed before its end.
func TestInstrumentEndNotifier(t *testing.T) {
	f := engineFixture(t, EngineConfig{})
	remote, _, _ := overP2P(t, f.inv.(*Engine), TransportConfig{})
	for name, inner := range map[string]Invoker{"engine": f.inv, "client": remote} {
		t.Run(name, func(t *testing.T) {
			got := make(chan int, 10)
			inv := Instrument(inner, SideConsumer, "test", Instrumentation{Ended: func(_, _, _ string, status int, _ time.Duration) { got <- status }})
			wantStatus := func(want ...int) {
				t.Helper()
				select {
				case s := <-got:
					if !slices.Contains(want, s) {
						t.Fatalf("status %d, want one of %v", s, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("no status reported, want %d", want)
				}
			}
			s := invoke(t, inv, request(proto.MsgReadProperty, "temperature"))
			if _, ok := s.(*notifiedSession); !ok {
				t.Fatalf("session %T: want it observed without forwarding", s)
			}
			collect(t, s)
			s.Close()
			wantStatus(http.StatusOK)
			collect(t, invoke(t, inv, request(proto.MsgReadProperty, "nosuch")))
			wantStatus(http.StatusNotFound)
			s = startBlock(t, &fixture{inv: inv, state: f.state})
			s.Close()
			collect(t, s)
			// closed while running: 499, or 200 when the cancelled
			// actionStatus was queued before the session ended
			wantStatus(499, http.StatusOK)
			select {
			case st := <-got:
				t.Fatalf("a second status %d for one interaction", st)
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}
