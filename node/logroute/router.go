package logroute

import (
	"context"
	"log"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
)

var (
	installOnce sync.Once
	std         = &router{}
)

// Register routes the records of go-libp2p and go-log to h, at level and
// above, until the returned function is called. Records go to the most
// recently registered handler that is still registered.
//
// The first call makes go-libp2p, go-log and the standard library's log
// package (stdlog.go) write to the router:
// gologshim picks its handler when a logger first logs, so a node
// registers before it builds its first host.
func Register(h slog.Handler, level slog.Leveler) (unregister func()) {
	installOnce.Do(func() {
		gologshim.SetDefaultHandler(std)
		golog.SetPrimaryCore(&zapToSlog{h: std})
		log.SetFlags(0)
		log.SetOutput(stdlogWriter{std})
	})
	return std.register(h, level)
}

type target struct {
	h     slog.Handler
	level slog.Leveler
}

// router is an slog.Handler forwarding to the current target. It is safe
// for concurrent use.
type router struct {
	mu      sync.RWMutex
	targets []*target // stack; the last is current
}

// register routes library logs to h at level and above until the returned
// function is called.
func (r *router) register(h slog.Handler, level slog.Leveler) (unregister func()) {
	t := &target{h: h, level: level}
	r.mu.Lock()
	r.targets = append(r.targets, t)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.targets = slices.DeleteFunc(r.targets, func(x *target) bool { return x == t })
		r.mu.Unlock()
	}
}

func (r *router) current() (slog.Handler, slog.Leveler) {
	_, h, level := r.currentTarget()
	return h, level
}

// currentTarget is current with the target it comes from, nil when the
// records go to slog.Default().
func (r *router) currentTarget() (*target, slog.Handler, slog.Leveler) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if n := len(r.targets); n > 0 {
		t := r.targets[n-1]
		return t, t.h, t.level
	}
	h := slog.Default().Handler()
	if _, ok := h.(interface{ GoLogBridge() }); ok {
		// slog.Default() is go-log's bridge, which would route the
		// record back here.
		return nil, slog.DiscardHandler, slog.LevelError
	}
	return nil, h, slog.LevelWarn
}

func (r *router) Enabled(ctx context.Context, l slog.Level) bool {
	h, min := r.current()
	return l >= min.Level() && h.Enabled(ctx, l)
}

func (r *router) Handle(ctx context.Context, rec slog.Record) error {
	h, min := r.current()
	if rec.Level < min.Level() || !h.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.Handle(ctx, rec)
}

// WithAttrs and WithGroup return handlers that still follow the router, so a
// library logger created once keeps reaching whichever handler is current.
func (r *router) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derivedHandler{r: r, ops: []func(slog.Handler) slog.Handler{
		func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) },
	}}
}

func (r *router) WithGroup(name string) slog.Handler {
	return (&derivedHandler{r: r}).WithGroup(name)
}

// derivedHandler replays WithAttrs/WithGroup on the router's current target.
// It keeps the handler it derived for the current target: go-libp2p checks
// Enabled on every stream it opens or accepts, and replaying WithAttrs
// formats the attributes each time.
type derivedHandler struct {
	r     *router
	ops   []func(slog.Handler) slog.Handler
	cache atomic.Pointer[derived]
}

// derived is the handler a derivedHandler built for one target.
type derived struct {
	target *target
	h      slog.Handler
}

func (d *derivedHandler) resolve() (slog.Handler, slog.Leveler) {
	t, h, min := d.r.currentTarget()
	if c := d.cache.Load(); t != nil && c != nil && c.target == t {
		return c.h, min
	}
	for _, op := range d.ops {
		h = op(h)
	}
	if t != nil {
		d.cache.Store(&derived{target: t, h: h})
	}
	return h, min
}

func (d *derivedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	h, min := d.resolve()
	return l >= min.Level() && h.Enabled(ctx, l)
}

func (d *derivedHandler) Handle(ctx context.Context, rec slog.Record) error {
	h, min := d.resolve()
	if rec.Level < min.Level() || !h.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.Handle(ctx, rec)
}

func (d *derivedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derivedHandler{r: d.r, ops: append(slices.Clip(d.ops),
		func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) })}
}

func (d *derivedHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return d
	}
	return &derivedHandler{r: d.r, ops: append(slices.Clip(d.ops),
		func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
