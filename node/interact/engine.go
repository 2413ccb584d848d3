package interact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// ErrEngineClosed is returned by Invoke after Close.
var ErrEngineClosed = errors.New("interact: engine closed")

// Engine serves the interactions of the node's own Things: it checks each
// request against the Thing's TD, hands it to the Thing's Backend, and
// keeps what lives longer than one call of the backend (invocations for
// queryAction and cancelAction, shared event and observation feeds with
// their subscribers).
//
// An Engine is safe for concurrent use. It owns the goroutines that run
// backend calls (one per interaction, one per event or observed property
// with subscribers); Close cancels and waits for them.
type Engine struct {
	things  Things
	auth    AuthorizeFunc // nil: every caller is allowed
	cfg     EngineConfig
	log     *slog.Logger
	now     func() time.Time
	schemas *schemaCache

	ctx    context.Context // the engine's lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	backends map[string]Backend
	actions  map[string]*interaction  // invocations, running and retained, by correlation
	retired  []*interaction           // finished invocations, oldest first
	subs     map[string]*subscription // subscriptions and observations, by correlation
	feeds    map[feedKey]*feed        // running backend feeds
}

// NewEngine returns an engine that finds TDs with deps.Things. Register
// the Things' backends with SetBackend. It uses the options WithLogger and
// WithClock.
func NewEngine(deps EngineDeps, cfg EngineConfig, opts ...Option) (*Engine, error) {
	if deps.Things == nil {
		return nil, errors.New("interact: EngineDeps.Things is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := newOptions(opts)
	ctx, cancel := context.WithCancel(context.Background())
	return &Engine{
		things:   deps.Things,
		auth:     deps.Authorize,
		cfg:      cfg,
		log:      o.log,
		now:      o.now,
		schemas:  newSchemaCache(cfg.SchemaCacheSize),
		ctx:      ctx,
		cancel:   cancel,
		backends: map[string]Backend{},
		actions:  map[string]*interaction{},
		subs:     map[string]*subscription{},
		feeds:    map[feedKey]*feed{},
	}, nil
}

// SetBackend makes b serve the Thing thingID; a nil b removes the Thing's
// backend, after which requests for it fail with 503. Interactions already
// running keep the backend they started with.
func (e *Engine) SetBackend(thingID string, b Backend) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b == nil {
		delete(e.backends, thingID)
		return
	}
	e.backends[thingID] = b
}

// Close ends every interaction (consumers of a subscription get a 503
// error message, running actions are cancelled) and waits for the backend
// calls to return. Backends that ignore their context hold Close up.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.subs {
		e.endSubLocked(s, newErrorMessage(s.req, http.StatusServiceUnavailable, TitleUnavailable, "the node is shutting down"))
	}
	return nil
}

type callerKey struct{}

// WithCaller returns ctx carrying the identity of the consumer on whose
// behalf a request is made: the libp2p Server puts the remote peer ID
// there, gateways their client's identity. The engine lets only the same
// caller query, cancel, stream into or unsubscribe an interaction it opened
// (an empty caller is the node itself and matches only itself).
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the caller WithCaller put into ctx, "" if none.
func CallerFrom(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(string)
	return c
}

// Invoke opens the interaction req starts on one of the node's own Things.
// It returns an error only after Close; a request that fails (unknown
// Thing, unknown affordance, input not matching the schema, …) gets a
// session that delivers the error message.
func (e *Engine) Invoke(ctx context.Context, req *proto.Message) (Session, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, ErrEngineClosed
	}
	req = req.Clone()
	if err := checkRequest(req); err != nil {
		return e.reject(req, err), nil
	}
	caller := CallerFrom(ctx)
	switch {
	case req.Type.FollowsAction():
		return e.toAction(ctx, req, caller), nil
	case req.Type.EndsSubscription():
		e.unsubscribe(req, caller)
		return newClosedSession(req, nil), nil
	}
	td, b, err := e.admit(ctx, req, caller)
	if err != nil {
		return e.reject(req, err), nil
	}
	if req.OneWay {
		switch req.Type {
		case proto.MsgInvokeAction, proto.MsgWriteProperty, proto.MsgWriteMultipleProperties:
		default:
			e.log.Debug("one-way request ignored", "request", req)
			return newClosedSession(req, nil), nil
		}
	}
	if err := CheckAffordance(td, req); err != nil {
		return e.reject(req, err), nil
	}
	return e.open(ctx, req, caller, td, b), nil
}

// admit finds the Thing req addresses, lets the Authorize hook decide
// whether caller may open req on it, and finds the Thing's backend.
func (e *Engine) admit(ctx context.Context, req *proto.Message, caller string) (*proto.TD, Backend, error) {
	td, ok := e.things.TD(req.ThingID)
	if !ok {
		return nil, nil, problem(http.StatusNotFound, TitleThingNotFound, "this node has no Thing %q", req.ThingID)
	}
	if err := e.authorize(ctx, td, req); err != nil {
		e.log.Debug("request refused", "request", req, "caller", caller, "err", err)
		return nil, nil, err
	}
	e.mu.Lock()
	b := e.backends[req.ThingID]
	e.mu.Unlock()
	if b == nil {
		return nil, nil, problem(http.StatusServiceUnavailable, TitleUnavailable, "no backend serves Thing %q", req.ThingID)
	}
	return td, b, nil
}

// open checks req against the data schemas of its affordance on td and
// opens it with backend b: a call (start) or a subscription (subscribe).
func (e *Engine) open(ctx context.Context, req *proto.Message, caller string, td *proto.TD, b Backend) Session {
	switch req.Type {
	case proto.MsgReadProperty, proto.MsgWriteProperty, proto.MsgObserveProperty:
		if _, err := e.checkProperty(td, req); err != nil {
			return e.reject(req, err)
		}
		if req.Type == proto.MsgObserveProperty {
			return e.subscribe(ctx, req, caller, b, []feedKey{{thingID: req.ThingID, name: req.Name}})
		}
		return e.start(ctx, req, caller, b, nil)
	case proto.MsgWriteMultipleProperties:
		names, values, err := e.checkMultiWrite(td, req)
		if err != nil {
			return e.reject(req, err)
		}
		return e.start(ctx, req, caller, multiWrite(e.log, b, req, names, values), nil)
	case proto.MsgInvokeAction:
		a := td.Actions[req.Name]
		if err := e.schemas.validateValue(a.Input, req.Input, "input"); err != nil {
			return e.reject(req, err)
		}
		return e.start(ctx, req, caller, b, a.Input)
	case proto.MsgSubscribeEvent:
		return e.subscribe(ctx, req, caller, b, []feedKey{{thingID: req.ThingID, event: true, name: req.Name}})
	case proto.MsgSubscribeAllEvents:
		names := make([]string, 0, len(td.Events))
		for name := range td.Events {
			names = append(names, name)
		}
		slices.Sort(names)
		keys := make([]feedKey, len(names))
		for i, name := range names {
			keys[i] = feedKey{thingID: req.ThingID, event: true, name: name}
		}
		return e.subscribe(ctx, req, caller, b, keys)
	}
	// impossible: checkRequest lets only the types above through
	return e.reject(req, problem(http.StatusBadRequest, TitleBadRequest, "%s is not a request", req.Type))
}

// checkRequest checks that req is a valid consumer → Thing message. Ids
// that are not UUIDs are accepted (the spec's own examples use such ids).
func checkRequest(req *proto.Message) error {
	if err := req.Validate(); err != nil && !errors.Is(err, proto.ErrNotUUID) {
		return problem(http.StatusBadRequest, TitleBadRequest, "%v", err)
	}
	if req.Type.FromThing() {
		return problem(http.StatusBadRequest, TitleBadRequest, "%s is a message from a Thing, not a request", req.Type)
	}
	return nil
}

// reject answers req with the error err describes, or with nothing when
// req expects no reply.
func (e *Engine) reject(req *proto.Message, err error) Session {
	if !req.ExpectsReply() {
		e.log.Debug("request without reply refused", "request", req, "err", err)
		return newClosedSession(req, nil)
	}
	return newClosedSession(req, errorMessage(req, err))
}

func isTrue(b *bool) bool { return b != nil && *b }

// CheckAffordance checks that td has the affordance req names: the
// property of readProperty, writeProperty and observeProperty, the action
// of invokeAction, the event of subscribeEvent (a 404 problem if not).
// Other requests pass. The engine checks every request with it; a gateway
// may check first, to answer before a round trip to the owner node.
func CheckAffordance(td *proto.TD, req *proto.Message) error {
	var found bool
	var kind string
	switch req.Type {
	case proto.MsgReadProperty, proto.MsgWriteProperty, proto.MsgObserveProperty:
		_, found = td.Properties[req.Name]
		kind = "property"
	case proto.MsgInvokeAction:
		_, found = td.Actions[req.Name]
		kind = "action"
	case proto.MsgSubscribeEvent:
		_, found = td.Events[req.Name]
		kind = "event"
	default:
		return nil
	}
	if !found {
		return problem(http.StatusNotFound, TitleAffordanceNotFound, "Thing %q has no %s %q", req.ThingID, kind, req.Name)
	}
	return nil
}

// checkProperty checks a property request against the TD, whose property
// CheckAffordance found: the operation is allowed, a written value
// matches the schema.
func (e *Engine) checkProperty(td *proto.TD, req *proto.Message) (*proto.PropertyAffordance, error) {
	p := td.Properties[req.Name]
	switch req.Type {
	case proto.MsgReadProperty:
		if isTrue(p.WriteOnly) {
			return nil, problem(http.StatusMethodNotAllowed, TitleOperationNotAllowed, "property %q is writeOnly", req.Name)
		}
	case proto.MsgObserveProperty:
		if !isTrue(p.Observable) {
			return nil, problem(http.StatusMethodNotAllowed, TitleOperationNotAllowed, "property %q is not observable", req.Name)
		}
	case proto.MsgWriteProperty:
		if err := e.checkWrite(p, req.Name, req.Data, "data"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (e *Engine) checkWrite(p *proto.PropertyAffordance, name string, v proto.Value, member string) error {
	if isTrue(p.ReadOnly) {
		return problem(http.StatusMethodNotAllowed, TitleOperationNotAllowed, "property %q is readOnly", name)
	}
	schema, err := p.DataSchema()
	if err != nil {
		return problem(http.StatusInternalServerError, TitleInternal, "data schema of property %q: %v", name, err)
	}
	return e.schemas.validateValue(schema, v, member)
}

// checkMultiWrite checks every property of a writeMultipleProperties and
// returns the names in order with their values.
func (e *Engine) checkMultiWrite(td *proto.TD, req *proto.Message) ([]string, map[string]proto.Value, error) {
	var raw map[string]json.RawMessage
	if err := req.Data.Decode(&raw); err != nil {
		return nil, nil, problem(http.StatusBadRequest, TitleBadRequest, "data: want an object of property values: %v", err)
	}
	names := make([]string, 0, len(raw))
	values := make(map[string]proto.Value, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := td.Properties[name]
		if p == nil {
			return nil, nil, problem(http.StatusNotFound, TitleAffordanceNotFound, "Thing %q has no property %q", req.ThingID, name)
		}
		v, err := proto.ParseValue(raw[name])
		if err != nil {
			return nil, nil, problem(http.StatusBadRequest, TitleBadRequest, "data/%s: %v", name, err)
		}
		if err := e.checkWrite(p, name, v, "data/"+name); err != nil {
			return nil, nil, err
		}
		values[name] = v
	}
	return names, values, nil
}

// multiWrite is the backend of a writeMultipleProperties: one
// writeProperty per property, in order, answered with one
// propertyReadings. It stops at the first failure; the properties written
// before it stay written (the operation is not atomic).
func multiWrite(log *slog.Logger, b Backend, req *proto.Message, names []string, values map[string]proto.Value) Backend {
	return BackendFunc(func(ctx context.Context, x *Exchange) error {
		out := make(map[string]proto.Value, len(names))
		for _, name := range names {
			w := req.Reply(proto.MsgWriteProperty)
			w.MessageID = req.MessageID
			w.Name, w.Data = name, values[name]
			got := values[name]
			wx := &Exchange{req: w, reply: func(m *proto.Message) error {
				if m.Type != proto.MsgPropertyReading {
					return fmt.Errorf("interact: %s cannot answer writeProperty", m.Type)
				}
				got = m.Value
				return nil
			}}
			if err := callBackend(ctx, log, b, wx); err != nil {
				return err
			}
			out[name] = got
		}
		data, err := proto.ValueOf(out)
		if err != nil {
			return err
		}
		m := req.Reply(proto.MsgPropertyReadings)
		m.Data = data
		return x.Reply(m)
	})
}
