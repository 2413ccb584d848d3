package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/tdcache"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const (
	// DefaultSyncWait is how long POST on an action waits for the Thing's
	// first answer before it answers 201 with a status URL: long enough
	// for a tool call, short enough for an HTTP client's patience.
	DefaultSyncWait = 30 * time.Second
	// DefaultRetention is how long a finished long-running invocation can
	// still be queried, like the engine's ActionRetention.
	DefaultRetention = 5 * time.Minute
	// DefaultMaxActions bounds the long-running invocations the gateway
	// follows at once; more are refused with 503.
	DefaultMaxActions = 1024
	// DefaultWriteTimeout bounds one write to an event stream: a consumer
	// that reads nothing for this long is dropped, so that it cannot pin
	// the handler (the engine has dropped its subscription by then).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultKeepAlive is the interval of comment lines on idle event
	// streams, below common proxy idle timeouts (60 s).
	DefaultKeepAlive = 15 * time.Second
	// maxBody bounds request bodies: one LMOS message payload.
	maxBody = 4 << 20
)

// Config configures a Handler. The zero value of every field selects its
// default.
type Config struct {
	// SyncWait: see DefaultSyncWait.
	SyncWait time.Duration
	// Retention: see DefaultRetention.
	Retention time.Duration
	// MaxActions: see DefaultMaxActions.
	MaxActions int
	// KeepAlive: see DefaultKeepAlive.
	KeepAlive time.Duration
	// WriteTimeout: see DefaultWriteTimeout.
	WriteTimeout time.Duration
	// BearerAuth tells that the API requires "Authorization: Bearer
	// <token>": the consumer view then declares the bearer security
	// scheme instead of nosec. The handler itself checks nothing.
	BearerAuth bool
	// WebSocketPath is the path of the node's lmosprotocol endpoint on
	// the same API (package wsgateway, e.g. "/ws"): the consumer view
	// then has a WebSocket form (subprotocol lmosprotocol) for every
	// affordance. Empty: none.
	WebSocketPath string
}

func (c Config) withDefaults() Config {
	if c.SyncWait == 0 {
		c.SyncWait = DefaultSyncWait
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.MaxActions == 0 {
		c.MaxActions = DefaultMaxActions
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.SyncWait < 0 {
		errs = append(errs, fmt.Errorf("gateway: SyncWait %v is negative", c.SyncWait))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("gateway: Retention %v is negative", c.Retention))
	}
	if c.MaxActions < 0 {
		errs = append(errs, fmt.Errorf("gateway: MaxActions %d is negative", c.MaxActions))
	}
	if c.KeepAlive < 0 {
		errs = append(errs, fmt.Errorf("gateway: KeepAlive %v is negative", c.KeepAlive))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("gateway: WriteTimeout %v is negative", c.WriteTimeout))
	}
	if c.WebSocketPath != "" && !strings.HasPrefix(c.WebSocketPath, "/") {
		errs = append(errs, fmt.Errorf("gateway: WebSocketPath %q does not start with /", c.WebSocketPath))
	}
	return errors.Join(errs...)
}

// Invokers calls the Thing a request resolved to: For(publisher) is the
// engine for the node's own Things and the owner node over libp2p
// otherwise. *interact.Router implements it, the node's one rule of how to
// call a Thing.
type Invokers interface {
	For(publisher peer.ID) interact.Invoker
}

// Resolver finds the Thing a consumer of this node addresses: the id, a
// publisher if the request names one (else ""), and whether it is a call
// (a Thing this node may not see is then refused with 403 rather than
// unknown). Its errors are *proto.Problem (404, 403, 300 with candidates).
// own.Things implements it; it is the rule the WebSocket, MQTT and SDK
// consumers share through interact.Router.
type Resolver interface {
	Resolve(ctx context.Context, id string, publisher peer.ID, call bool) (directory.Entry, error)
}

// Broker is the node's MQTT binding, for the MQTT forms of consumer
// views; the composition root adapts the MQTT gateway to it.
type Broker interface {
	// MQTT returns the broker's URL and the topic function of Thing e
	// (see MQTTForms.Topic); ok is false when the MQTT gateway does not
	// expose e.
	MQTT(e directory.Entry) (broker string, topic func(levels ...string) string, ok bool)
}

// Deps are what a Handler works with.
type Deps struct {
	// Resolver finds the Thing a request addresses. Required.
	Resolver Resolver
	// Invokers calls the resolved Thing's publisher. Required.
	Invokers Invokers
	// Broker, if set, adds MQTT forms to the consumer views of the Things
	// the node's MQTT gateway exposes.
	Broker Broker
	// Trust, if set, marks the publisher in consumer views (lmos:trust)
	// and in the LMOS-Trust header of /things/{id}/td.
	Trust Trust
	// Orgs, if set, checks the organisation a TD claims: consumer views
	// carry lmos:organizationStatus, /things/{id}/td the LMOS-Organization
	// header.
	Orgs did.Lookup
}

// Trust is what the handler asks the operator's trust list (trust.List).
type Trust interface {
	Mark(p peer.ID) trust.Mark
}

// Handler serves the HTTP binding (see the package documentation).
type Handler struct {
	deps Deps
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	tds *tdcache.Cache // parsed TDs of the resolved Things

	mu      sync.Mutex
	actions map[string]*action // by invocation (correlationID)
}

// New returns the Handler of deps.
func New(deps Deps, cfg Config, opts ...Option) (*Handler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Resolver == nil:
		return nil, errors.New("gateway: Deps.Resolver is nil")
	case deps.Invokers == nil:
		return nil, errors.New("gateway: Deps.Invokers is nil")
	}
	log := slog.New(slog.DiscardHandler)
	for _, opt := range opts {
		if opt != nil {
			opt(&log)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{deps: deps, cfg: cfg, log: log, ctx: ctx, cancel: cancel, tds: tdcache.New(0), actions: map[string]*action{}}
	h.mux = http.NewServeMux()
	for pattern, fn := range h.routes() {
		h.mux.HandleFunc(pattern, fn)
	}
	return h, nil
}

func (h *Handler) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /things/{id}/td":                             h.getTD,
		"GET /things/{id}/properties/{name}":              h.readProperty,
		"PUT /things/{id}/properties/{name}":              h.writeProperty,
		"GET /things/{id}/properties/{name}/observe":      h.observeProperty,
		"POST /things/{id}/actions/{name}":                h.invokeAction,
		"GET /things/{id}/actions/{name}/{invocation}":    h.queryAction,
		"DELETE /things/{id}/actions/{name}/{invocation}": h.cancelAction,
		"GET /things/{id}/events/{name}":                  h.subscribeEvent,
	}
}

// Patterns returns the http.ServeMux patterns the Handler serves, for a
// parent mux to route to it (method-less, so that other methods get the
// Handler's 405).
func Patterns() []string {
	return []string{
		"/things/{id}/td",
		"/things/{id}/properties/{name}",
		"/things/{id}/properties/{name}/observe",
		"/things/{id}/actions/{name}",
		"/things/{id}/actions/{name}/{invocation}",
		"/things/{id}/events/{name}",
	}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := h.mux.Handler(r)
	if pattern == "" {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusMethodNotAllowed, Title: http.StatusText(http.StatusMethodNotAllowed),
			Detail: fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)})
		return
	}
	if r.Method != http.MethodDelete && !isNDJSON(r) && !strings.HasSuffix(r.URL.Path, "/observe") && !strings.Contains(r.URL.Path, "/events/") {
		// Values and action statuses come as JSON or CBOR; the TD as
		// JSON only.
		isTD := pattern == "GET /things/{id}/td"
		if _, ok := negotiate(r, !isTD); !ok {
			offered := "application/json or application/cbor"
			if isTD {
				offered = "application/json"
			}
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotAcceptable, "Accept %q: this resource is offered as %s only", r.Header.Get("Accept"), offered))
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// isNDJSON reports whether r's body is application/x-ndjson (a streaming
// session, answered with an event stream).
func isNDJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == interact.ContentTypeNDJSON
}

// Close ends every event stream and long-running invocation the Handler
// follows (cancelling them) and waits for its goroutines.
func (h *Handler) Close() error {
	// Under mu, so that track either sees the Handler closed or has added
	// its goroutine before Wait.
	h.mu.Lock()
	h.cancel()
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// requestContext is r's context, also cancelled when the Handler closes.
func (h *Handler) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(h.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// readBody reads a bounded request body; empty is nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *lmosproto.Problem) {
	return httpapi.ReadBody(w, r, maxBody)
}

// Option sets what Config cannot hold.
type Option func(log **slog.Logger)

// WithLogger sends the handler's logs to log (default: discarded).
func WithLogger(log *slog.Logger) Option {
	return func(l **slog.Logger) {
		if log != nil {
			*l = log
		}
	}
}
