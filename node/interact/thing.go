package interact

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/lmosnode/lmosnode/proto"
)

// ActionHandler serves invokeAction: it gets the input (absent when the
// request had none) and returns the output. progress sends an intermediate
// actionStatus "running" with the value as output, for long-running
// actions; it returns at once if the consumer has gone. A returned error
// becomes an error message: return a *proto.Problem to choose status and
// title.
type ActionHandler func(ctx context.Context, input proto.Value, progress func(proto.Value)) (proto.Value, error)

// StreamHandler serves a streaming session (invokeAction with "stream":
// true): in yields the input chunks (the invocation's own input first, if
// any) and is closed at streamEnd; out sends one output chunk and fails
// once the session is over. Returning nil completes the session.
//
// The same handler serves an ordinary invokeAction of the action (a
// consumer that does not stream): in then yields only the input, and each
// out becomes an actionStatus "running".
type StreamHandler func(ctx context.Context, in <-chan proto.Value, out func(proto.Value) error) error

// PropertyReader returns a property's current value.
type PropertyReader func(ctx context.Context) (proto.Value, error)

// PropertyWriter sets a property's value (already checked against the
// property's data schema).
type PropertyWriter func(ctx context.Context, v proto.Value) error

// Thing is a Backend made of Go handlers, for a program that embeds the
// node: register a handler per affordance, Emit events and report property
// changes. Affordances without a handler answer 501.
//
// A Thing is safe for concurrent use; handlers run concurrently, one
// goroutine per interaction.
type Thing struct {
	mu        sync.Mutex
	props     map[string]propertyHandlers
	actions   map[string]ActionHandler
	streams   map[string]StreamHandler
	listeners map[string]map[*Exchange]struct{} // event name → feeds
	observers map[string]map[*Exchange]struct{} // property name → feeds
}

type propertyHandlers struct {
	read  PropertyReader
	write PropertyWriter
}

// NewThing returns a Thing without handlers.
func NewThing() *Thing {
	return &Thing{
		props:     map[string]propertyHandlers{},
		actions:   map[string]ActionHandler{},
		streams:   map[string]StreamHandler{},
		listeners: map[string]map[*Exchange]struct{}{},
		observers: map[string]map[*Exchange]struct{}{},
	}
}

// OnProperty serves the property name: read answers readProperty (nil:
// the property cannot be read), write answers writeProperty (nil: it cannot
// be written). After a write, observers get the new value (read back with
// read when there is one).
func (t *Thing) OnProperty(name string, read PropertyReader, write PropertyWriter) *Thing {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.props[name] = propertyHandlers{read: read, write: write}
	return t
}

// OnAction serves invokeAction of the action name.
func (t *Thing) OnAction(name string, h ActionHandler) *Thing {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.actions[name] = h
	return t
}

// OnStream serves the action name as a streaming session.
func (t *Thing) OnStream(name string, h StreamHandler) *Thing {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streams[name] = h
	return t
}

// Emit sends an event to the event's current subscribers (on this node
// and, through it, on others). It never blocks: a subscriber that cannot
// keep up is dropped by the engine. It returns how many feeds took the
// event (0: nobody subscribes).
func (t *Thing) Emit(event string, data proto.Value) int {
	return t.notify(t.listeners, event, func(x *Exchange) error { return x.Event(data) })
}

// Changed tells the observers of a property its new value. Like Emit, it
// never blocks.
func (t *Thing) Changed(property string, v proto.Value) int {
	return t.notify(t.observers, property, func(x *Exchange) error { return x.Reading(v) })
}

func (t *Thing) notify(set map[string]map[*Exchange]struct{}, name string, send func(*Exchange) error) int {
	t.mu.Lock()
	xs := make([]*Exchange, 0, len(set[name]))
	for x := range set[name] {
		xs = append(xs, x)
	}
	t.mu.Unlock()
	n := 0
	for _, x := range xs {
		if send(x) == nil {
			n++
		}
	}
	return n
}

// Handle implements Backend.
func (t *Thing) Handle(ctx context.Context, x *Exchange) error {
	req := x.Request()
	t.mu.Lock()
	p, hasProp := t.props[req.Name]
	act := t.actions[req.Name]
	stream := t.streams[req.Name]
	t.mu.Unlock()
	switch req.Type {
	case proto.MsgReadProperty:
		if !hasProp || p.read == nil {
			return notImplemented(req)
		}
		v, err := p.read(ctx)
		if err != nil {
			return err
		}
		return x.Reading(v)
	case proto.MsgWriteProperty:
		if !hasProp || p.write == nil {
			return notImplemented(req)
		}
		if err := p.write(ctx, req.Data); err != nil {
			return err
		}
		v := req.Data
		if p.read != nil {
			var err error
			if v, err = p.read(ctx); err != nil {
				return err
			}
		}
		t.Changed(req.Name, v)
		return x.Reading(v)
	case proto.MsgObserveProperty:
		return t.wait(ctx, t.observers, req.Name, x)
	case proto.MsgSubscribeEvent:
		return t.wait(ctx, t.listeners, req.Name, x)
	case proto.MsgInvokeAction:
		switch {
		case stream != nil:
			return runStream(ctx, x, stream)
		case act != nil:
			progress := func(v proto.Value) { _ = x.Status(proto.ActionRunning, v) }
			out, err := act(ctx, req.Input, progress)
			if err != nil {
				return err
			}
			return x.Status(proto.ActionCompleted, out)
		}
	}
	return notImplemented(req)
}

func notImplemented(req *proto.Message) error {
	return problem(http.StatusNotImplemented, TitleNotImplemented, "the Thing has no handler for %s %q", req.Type, req.Name)
}

// wait registers a feed until its context ends.
func (t *Thing) wait(ctx context.Context, set map[string]map[*Exchange]struct{}, name string, x *Exchange) error {
	t.mu.Lock()
	if set[name] == nil {
		set[name] = map[*Exchange]struct{}{}
	}
	set[name][x] = struct{}{}
	t.mu.Unlock()
	<-ctx.Done()
	t.mu.Lock()
	delete(set[name], x)
	if len(set[name]) == 0 {
		delete(set, name)
	}
	t.mu.Unlock()
	return nil
}

// runStream runs a StreamHandler for a session or an ordinary invocation.
func runStream(ctx context.Context, x *Exchange, h StreamHandler) error {
	req := x.Request()
	session := req.Stream && x.Inputs() != nil
	if session {
		if err := x.Accept(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	in := make(chan proto.Value)
	relayed := make(chan struct{})
	// After Accept: the relay closes relayed, and a session that ended
	// before it was accepted must not wait for a relay never started.
	defer func() { cancel(); <-relayed }()
	// relay the initial input and then the session's chunks, until
	// streamEnd or the end of the handler
	go func() {
		defer close(relayed)
		defer close(in)
		if req.Input.Present() {
			select {
			case in <- req.Input:
			case <-ctx.Done():
				return
			}
		}
		if !session {
			return
		}
		for {
			select {
			case v, ok := <-x.Inputs():
				if !ok {
					return
				}
				select {
				case in <- v:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	out := func(v proto.Value) error { return x.Status(proto.ActionRunning, v) }
	if err := h(ctx, in, out); err != nil {
		return fmt.Errorf("stream handler: %w", err)
	}
	return x.Status(proto.ActionCompleted, proto.Value{})
}
