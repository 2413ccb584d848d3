package own

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/tdcache"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Publisher signs, stores and announces the node's records; the
// federation implements it.
type Publisher interface {
	// Publish signs td as the next version of the node's Thing td.ID,
	// stores it with the node-local metadata local (nil keeps what is
	// stored) and announces it.
	Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error)
	// Remove signs, stores and announces the tombstone of the Thing id.
	Remove(ctx context.Context, id string) error
}

// Access says whether a peer may see and call a Thing restricted to
// groups (docs/groups.md, "Enforcement"); the group service implements
// it. thingID is empty when only membership is asked. It is called under
// the directory's read lock and from the engine: it must not call the
// Directory or the Engine, and must be safe for concurrent use.
type Access interface {
	Allowed(groups []string, thingID string, p peer.ID) bool
}

// Fetcher reads a Thing of a known publisher that the directory does not
// hold (from the DHT); the federation implements it.
type Fetcher interface {
	FetchThing(ctx context.Context, publisher peer.ID, id string) (directory.Entry, error)
}

// Deps are what Things works with. Directory, Self and Publisher are
// required; the caller keeps ownership of them.
type Deps struct {
	// Directory holds the node's own Things and those it learned.
	Directory *directory.Directory
	// Self is the node's peer ID: the publisher of its own Things.
	Self peer.ID
	// Publisher publishes and removes own Things (the federation).
	Publisher Publisher
	// Access decides who may see and call group-scoped Things. Nil allows
	// this node only: no other peer sees or calls a group-scoped Thing.
	Access Access
	// Fetcher, if set, is asked by Resolve for a Thing of a named
	// publisher that the directory lacks.
	Fetcher Fetcher
	// Trust, if set, is the operator's trust list: Resolve refuses denied
	// publishers and picks the best-ranked of several.
	Trust Trust
	// Kinds build the backends of Things published with a backend kind
	// (directory.Local.Kind) other than an HTTP service, by kind: for
	// example "a2a", an imported A2A agent (package a2abridge). The
	// function is called once per kind and URL; what it returns is kept.
	Kinds map[string]func(url string) (interact.Backend, error)
}

// Trust is what Resolve asks the operator's trust list (trust.List).
type Trust interface {
	// Rank orders publishers: trust.RankDenied (refused) up to
	// trust.RankOwn.
	Rank(p peer.ID) int
	// Mark is the publisher's mark for the candidates of a 300.
	Mark(p peer.ID) trust.Mark
}

// Config configures Things. The zero value of every field selects its
// default.
type Config struct {
	// Engine configures the interaction engine of the own Things.
	Engine interact.EngineConfig
	// TDCacheSize bounds the parsed TDs kept (tdcache.DefaultSize if 0).
	TDCacheSize int
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.TDCacheSize < 0 {
		errs = append(errs, fmt.Errorf("own: TDCacheSize %d is negative", c.TDCacheSize))
	}
	if err := c.Engine.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("own: Engine: %w", err))
	}
	return errors.Join(errs...)
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger sends the logs of Things, its engine and its HTTP backends to
// log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// Things is the home of the node's own Things; see the package
// documentation. It is safe for concurrent use.
type Things struct {
	deps   Deps
	log    *slog.Logger
	tds    *tdcache.Cache
	engine *interact.Engine

	mu    sync.Mutex
	sdk   map[string]interact.Backend      // by thing id: Go handlers, agents over WebSocket
	http  map[string]*interact.HTTPBackend // by backend URL
	kinds map[[2]string]interact.Backend   // by backend kind and URL (Deps.Kinds)
}

// New builds the Things of deps: the engine that serves their
// interactions, with every own Thing the directory holds attached.
func New(deps Deps, cfg Config, opts ...Option) (*Things, error) {
	switch {
	case deps.Directory == nil:
		return nil, errors.New("own: Deps.Directory is nil")
	case deps.Self == "":
		return nil, errors.New("own: Deps.Self is empty")
	case deps.Publisher == nil:
		return nil, errors.New("own: Deps.Publisher is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	t := &Things{
		deps:  deps,
		log:   o.log,
		tds:   tdcache.New(cfg.TDCacheSize),
		sdk:   map[string]interact.Backend{},
		http:  map[string]*interact.HTTPBackend{},
		kinds: map[[2]string]interact.Backend{},
	}
	var err error
	if t.engine, err = interact.NewEngine(interact.EngineDeps{Things: t, Authorize: t.authorize}, cfg.Engine, interact.WithLogger(o.log)); err != nil {
		return nil, fmt.Errorf("own: %w", err)
	}
	for _, e := range deps.Directory.Own() {
		t.engine.SetBackend(e.ThingID, t)
	}
	return t, nil
}

// Engine returns the engine that serves the own Things' interactions; the
// libp2p server, the router and the fan-out hand it requests. It is
// closed by Close.
func (t *Things) Engine() *interact.Engine { return t.engine }

// Close ends the own Things' interactions (see interact.Engine.Close).
func (t *Things) Close() error { return t.engine.Close() }

// Publish signs, stores and announces td as the next version of an own
// Thing (tdd.Publisher) and makes the backends serve it: a handler
// registered for it, else the HTTP service of local.Backend.
func (t *Things) Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error) {
	e, ch, err := t.deps.Publisher.Publish(ctx, td, local)
	if err != nil {
		return e, ch, err
	}
	t.engine.SetBackend(e.ThingID, t)
	return e, ch, nil
}

// Remove withdraws the own Thing id with a signed tombstone and detaches
// its backend.
func (t *Things) Remove(ctx context.Context, id string) error {
	if err := t.deps.Publisher.Remove(ctx, id); err != nil {
		return err
	}
	t.setSDK(id, nil)
	t.engine.SetBackend(id, nil)
	return nil
}

// Register publishes td as an own Thing and makes backend serve its
// interactions: a Go program's handlers (interact.Thing) or an agent
// connected over WebSocket (wsgateway.Registrar). Registering the same id
// again replaces both.
func (t *Things) Register(ctx context.Context, td *lmosproto.TD, backend interact.Backend) error {
	if td == nil || backend == nil {
		return errors.New("own: register: td and backend are required")
	}
	t.setSDK(td.ID, backend)
	if _, _, err := t.Publish(ctx, td, nil); err != nil {
		t.setSDK(td.ID, nil)
		return err
	}
	return nil
}

// Unregister withdraws the Thing thingID (wsgateway.Registrar).
func (t *Things) Unregister(ctx context.Context, thingID string) error {
	return t.Remove(ctx, thingID)
}

// TD returns the current TD of the own Thing id (interact.Things).
func (t *Things) TD(id string) (*lmosproto.TD, bool) {
	e, ok := t.deps.Directory.Get(t.deps.Self, id)
	if !ok {
		return nil, false
	}
	td, err := t.tds.TD(e)
	if err != nil {
		t.log.Warn("own thing unreadable", "thing", id, "err", err)
		return nil, false
	}
	return td, true
}

// TDOf returns the TD of any Thing the directory holds, by publisher and
// id, parsed once per version.
func (t *Things) TDOf(publisher peer.ID, id string) (*lmosproto.TD, bool) {
	e, ok := t.deps.Directory.Get(publisher, id)
	if !ok {
		return nil, false
	}
	td, err := t.tds.TD(e)
	return td, err == nil
}

// Exposes reports whether e is one of the Things Exposed lists: the
// node's own, not scoped to groups.
func (t *Things) Exposes(e directory.Entry) bool {
	return e.Publisher == t.deps.Self && len(e.Groups) == 0 && !e.Tombstone
}

// Exposed returns the TDs of the node's own public Things: those it
// offers on an MQTT broker anyone may read (mqttgw.ThingLister).
func (t *Things) Exposed() []*lmosproto.TD {
	var tds []*lmosproto.TD
	for _, e := range t.deps.Directory.Own() {
		if !t.Exposes(e) {
			continue
		}
		if td, err := t.tds.TD(e); err == nil {
			tds = append(tds, td)
		}
	}
	return tds
}

// Handle serves an interaction of an own Thing (interact.Backend): the
// handlers registered for it first, else the HTTP service named by its
// backend URL, looked up at call time so that a republication with
// another URL takes effect at once.
func (t *Things) Handle(ctx context.Context, x *interact.Exchange) error {
	be, err := t.backendOf(x.Request().ThingID)
	if err != nil {
		return err
	}
	return be.Handle(ctx, x)
}

func (t *Things) backendOf(id string) (interact.Backend, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if be, ok := t.sdk[id]; ok {
		return be, nil
	}
	e, ok := t.deps.Directory.Get(t.deps.Self, id)
	if !ok || e.Local.Backend == "" {
		return nil, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Title: interact.TitleUnavailable,
			Detail: fmt.Sprintf("Thing %q has no backend on the node that publishes it (its operator sets one with 'lmosnode things publish FILE --backend URL', or registers handlers)", id)}
	}
	if e.Local.Kind != "" {
		return t.kindBackend(id, e.Local)
	}
	if be, ok := t.http[e.Local.Backend]; ok {
		return be, nil
	}
	be, err := interact.NewHTTPBackend(interact.HTTPBackendConfig{URL: e.Local.Backend}, interact.WithLogger(t.log))
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("backend of Thing %q: %v", id, err)}
	}
	t.http[e.Local.Backend] = be
	return be, nil
}

// kindBackend is the backend of kind local.Kind for local.Backend
// (Deps.Kinds); t.mu is held.
func (t *Things) kindBackend(id string, local directory.Local) (interact.Backend, error) {
	key := [2]string{local.Kind, local.Backend}
	if be, ok := t.kinds[key]; ok {
		return be, nil
	}
	build, ok := t.deps.Kinds[local.Kind]
	if !ok {
		return nil, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Title: interact.TitleUnavailable,
			Detail: fmt.Sprintf("Thing %q has a backend of kind %q, which this node does not serve", id, local.Kind)}
	}
	be, err := build(local.Backend)
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("%s backend of Thing %q: %v", local.Kind, id, err)}
	}
	t.kinds[key] = be
	return be, nil
}

func (t *Things) setSDK(id string, be interact.Backend) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if be == nil {
		delete(t.sdk, id)
		return
	}
	t.sdk[id] = be
}
