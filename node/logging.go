package node

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
	"go.uber.org/zap/zapcore"
)

// Library logs. go-libp2p logs through gologshim (slog); kad-dht and
// go-ds-pebble through go-log/v2 (zap). Both are process-wide, so the node
// installs one router for them, once, and every Node registers its logger
// with it while it is open; records go to the most recently opened Node
// still open (in a daemon there is exactly one). With no Node open they go
// to slog.Default().
//
// Per-subsystem levels of go-log (GOLOG_LOG_LEVEL) still filter go-log's
// zap loggers before their records reach the router.

var (
	routeOnce sync.Once
	router    = &logRouter{}
)

// installLogRouter makes go-libp2p and go-log write to router. gologshim
// picks its handler when a logger first logs, so this runs before the first
// host is built.
func installLogRouter() {
	routeOnce.Do(func() {
		gologshim.SetDefaultHandler(router)
		golog.SetPrimaryCore(&zapToSlog{h: router})
	})
}

type logTarget struct {
	h     slog.Handler
	level slog.Leveler
}

// logRouter is an slog.Handler forwarding to the current target. It is safe
// for concurrent use.
type logRouter struct {
	mu      sync.RWMutex
	targets []*logTarget // stack; the last is current
}

// register routes library logs to h at level and above until the returned
// function is called.
func (r *logRouter) register(h slog.Handler, level slog.Leveler) (unregister func()) {
	t := &logTarget{h: h, level: level}
	r.mu.Lock()
	r.targets = append(r.targets, t)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.targets = slices.DeleteFunc(r.targets, func(x *logTarget) bool { return x == t })
		r.mu.Unlock()
	}
}

func (r *logRouter) current() (slog.Handler, slog.Leveler) {
	_, h, level := r.currentTarget()
	return h, level
}

// currentTarget is current with the target it comes from, nil when the
// records go to slog.Default().
func (r *logRouter) currentTarget() (*logTarget, slog.Handler, slog.Leveler) {
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

func (r *logRouter) Enabled(ctx context.Context, l slog.Level) bool {
	h, min := r.current()
	return l >= min.Level() && h.Enabled(ctx, l)
}

func (r *logRouter) Handle(ctx context.Context, rec slog.Record) error {
	h, min := r.current()
	if rec.Level < min.Level() || !h.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.Handle(ctx, rec)
}

// WithAttrs and WithGroup return handlers that still follow the router, so a
// library logger created once keeps reaching whichever Node is current.
func (r *logRouter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derivedHandler{r: r, ops: []func(slog.Handler) slog.Handler{
		func(h slog.Handler) slog.Handler { return h.WithAttrs(attrs) },
	}}
}

func (r *logRouter) WithGroup(name string) slog.Handler {
	return (&derivedHandler{r: r}).WithGroup(name)
}

// derivedHandler replays WithAttrs/WithGroup on the router's current target.
// It keeps the handler it derived for the current target: go-libp2p checks
// Enabled on every stream it opens or accepts, and replaying WithAttrs
// formats the attributes each time.
type derivedHandler struct {
	r     *logRouter
	ops   []func(slog.Handler) slog.Handler
	cache atomic.Pointer[derived]
}

// derived is the handler a derivedHandler built for one target.
type derived struct {
	target *logTarget
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

// zapToSlog is a zapcore.Core writing go-log's zap records to an
// slog.Handler, so kad-dht's and pebble's go-log loggers reach the node's
// logger.
type zapToSlog struct {
	h      slog.Handler
	fields []zapcore.Field
}

func (c *zapToSlog) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), zapLevelToSlog(l))
}

func (c *zapToSlog) With(fields []zapcore.Field) zapcore.Core {
	return &zapToSlog{h: c.h, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *zapToSlog) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapToSlog) Write(e zapcore.Entry, fields []zapcore.Field) error {
	rec := slog.NewRecord(e.Time, zapLevelToSlog(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		rec.AddAttrs(slog.String("logger", e.LoggerName))
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	for k, v := range enc.Fields {
		rec.AddAttrs(slog.Any(k, v))
	}
	return c.h.Handle(context.Background(), rec)
}

func (c *zapToSlog) Sync() error { return nil }

func zapLevelToSlog(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}
