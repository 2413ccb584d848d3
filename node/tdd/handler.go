package tdd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Publisher publishes the node's own Things. The federation implements it.
type Publisher interface {
	// Publish signs td with the node's key as the next version of the
	// node's Thing td.ID (lmos:seq above every version held, the proof
	// replaced), stores it in the directory with the node-local metadata
	// local (nil keeps what is stored) and announces it. It returns the
	// stored entry and what the store did. A td that is not a valid TD is
	// refused with an error wrapping proto.ValidationErrors.
	Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error)
	// Remove signs, stores and announces the tombstone of the node's Thing
	// id.
	Remove(ctx context.Context, id string) error
}

// Resolver finds the Thing a read of /things/{id} addresses: the id, a
// publisher if the request names one (else ""), and the caller's view
// (Visibility). Its errors are *proto.Problem (404, 300 with candidates,
// whose Href the handler fills). own.Things implements it: the node's one
// rule of which publisher serves a Thing, shared with the HTTP binding and
// the router of the other transports.
type Resolver interface {
	ResolveAs(ctx context.Context, id string, publisher peer.ID, call bool, visible func(directory.Entry) bool) (directory.Entry, error)
}

// Finder looks Things up beyond the directory (the DHT). It is optional.
type Finder interface {
	// LookupCapability asks the federation for the Things that offer
	// the capability id (an lmos:id, without version) and stores those
	// it finds, fetched and verified, in the directory, which the
	// handler then searches.
	LookupCapability(ctx context.Context, id string) error
}

// PeerInfo is a peer the node knows.
type PeerInfo struct {
	ID    peer.ID
	Addrs []ma.Multiaddr
	// Source says how the node learned of the peer ("mdns", "dht",
	// "bootstrap", "connect", …); empty if unknown.
	Source string
	// Conn describes the open connections; zero if unknown.
	Conn PeerConn
}

// PeerConn describes the open connections to a peer (see
// discovery.PeerInfo).
type PeerConn struct {
	// State is "connected" or "limited" (relayed only).
	State string
	// Direction is "inbound", "outbound" or "both".
	Direction string
	// Relayed is true when every connection goes through a relay.
	Relayed bool
	// Latency is the measured round-trip time; 0 if unknown.
	Latency time.Duration
	// AgentVersion is the peer's identify agent version.
	AgentVersion string
	// ConnectedAt is when the oldest open connection was opened.
	ConnectedAt time.Time
}

// Peers lists and connects the node's peers. It is optional.
type Peers interface {
	// Peers returns the peers the node knows.
	Peers() []PeerInfo
	// Connect dials the peer at multiaddr, which ends in /p2p/<peer ID>.
	Connect(ctx context.Context, multiaddr string) (PeerInfo, error)
}

// Deps are the components a Handler serves. Directory and PeerID are
// required.
type Deps struct {
	// Directory is the node's directory.
	Directory *directory.Directory
	// PeerID is the node's peer ID: its own Things are published by it.
	PeerID peer.ID
	// Resolver finds the Thing a read of /things/{id} addresses. Required.
	Resolver Resolver
	// Publisher publishes and removes own Things; nil makes every write
	// 501 Not Implemented.
	Publisher Publisher
	// Finder, if set, is asked on every capability filter before the
	// directory is searched (it keeps repeated lookups cheap itself).
	Finder Finder
	// Peers, if set, serves /api/v1/peers and /api/v1/connect (501
	// otherwise).
	Peers Peers
	// BaseURL is the URL the API is reached at, e.g.
	// "http://127.0.0.1:5080", used in the directory TD, Location and Link
	// headers. Empty: derived from each request's Host.
	BaseURL string
	// Visibility, if set, returns the predicate deciding which Things the
	// request's caller may see (group membership). The predicate is called
	// under the directory's read lock and must not call the Directory.
	// Nil: every Thing is visible.
	Visibility func(r *http.Request) func(directory.Entry) bool
	// ConsumerView, if set, returns the consumer view of entry e (an
	// unsigned TD whose forms point at this node, package gateway) for the
	// consumer of r, who may see e. It serves GET /things?view=consumer,
	// which the directory TD's things property reads, and the Link from a
	// signed TD to its consumer view. Nil: view=consumer is 501.
	ConsumerView func(r *http.Request, e directory.Entry) ([]byte, error)
	// Trust, if set, is the operator's trust list: listings put its
	// preferred, then allowed publishers first, and a retrieved TD's
	// LMOS-Trust header carries its publisher's mark.
	Trust Trust
	// Orgs, if set, checks the organisation a TD claims
	// (lmos:organization) against the organisation's DID document: the
	// listing's and a retrieved TD's LMOS-Organization header, and the
	// admin listing's organization member (docs/identity.md).
	Orgs did.Lookup
}

// Trust is what the handler asks the operator's trust list (trust.List).
type Trust interface {
	Mark(p peer.ID) trust.Mark
	Rank(p peer.ID) int
}

// Defaults of Config.
const (
	// DefaultLimit is the page size of a listing without limit: enough for
	// a screen of results, small enough that an unbounded request does not
	// make the node read its whole directory.
	DefaultLimit = 100
	// DefaultMaxLimit caps limit; a larger one is lowered (the Link header
	// leads on).
	DefaultMaxLimit = 1000
	// DefaultMaxPageBytes bounds the TDs of one listing page: a page that
	// would hold more ends early and its Link header leads on from there.
	// 8 MiB holds a default page of 100 TDs of the largest size with room
	// to spare, and keeps concurrent listings of a large directory from
	// each holding a page of 1000 large TDs (64 MiB) in memory.
	DefaultMaxPageBytes = 8 << 20
	// DefaultFindTimeout bounds the federation lookup on a capability
	// miss: a DHT lookup in a small network answers within a few seconds.
	DefaultFindTimeout = 5 * time.Second
	// DefaultWriteTimeout bounds a publish or remove through the
	// Publisher (a durable write and an announcement).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds POST /api/v1/connect.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultHeartbeat is the period of the comment lines on an idle event
	// stream, below the 30–60 s after which proxies drop idle connections.
	DefaultHeartbeat = 15 * time.Second
	// DefaultSearchTimeout is the watchdog of a JSONPath search: a query
	// over a few thousand TDs answers in well under a second, so one that
	// runs for seconds is abusive or mistaken.
	DefaultSearchTimeout = 5 * time.Second
	// DefaultMaxQueryLength bounds a JSONPath query: real queries are a
	// line long.
	DefaultMaxQueryLength = 1024
	// DefaultMaxQueryDepth bounds the nesting of brackets and parentheses
	// in a JSONPath query (filters within filters).
	DefaultMaxQueryDepth = 8
	// DefaultMaxSearchNodes bounds the nodes a JSONPath query selects at
	// any step: a TD holds a few hundred nodes, so a useful answer over a
	// large directory stays below, while "$..*..*" does not.
	DefaultMaxSearchNodes = 1_000_000
)

// Config configures a Handler. The zero value of every field selects its
// default (the Default* constants). It has no JSON form of its own: a node
// that makes these settable maps its configuration file onto it.
type Config struct {
	// DefaultLimit is the page size of a listing without limit.
	DefaultLimit int
	// MaxLimit caps the limit of a listing.
	MaxLimit int
	// MaxPageBytes bounds the bytes of the TDs of one listing page (a page
	// has at least one TD).
	MaxPageBytes int
	// FindTimeout bounds the Finder's lookup of a capability.
	FindTimeout time.Duration
	// WriteTimeout bounds a Publish or Remove.
	WriteTimeout time.Duration
	// ConnectTimeout bounds a Peers.Connect.
	ConnectTimeout time.Duration
	// Heartbeat is the period of comment lines on an event stream.
	Heartbeat time.Duration
	// SearchTimeout aborts a JSONPath search that runs longer.
	SearchTimeout time.Duration
	// MaxQueryLength is the longest JSONPath query accepted, in bytes.
	MaxQueryLength int
	// MaxQueryDepth is the deepest nesting of a JSONPath query accepted.
	MaxQueryDepth int
	// MaxSearchNodes is the most nodes a JSONPath query may select at
	// any step.
	MaxSearchNodes int
	// BearerAuth tells that the API requires "Authorization: Bearer
	// <token>": the directory TD then declares the bearer security scheme
	// instead of nosec. The handler itself checks nothing.
	BearerAuth bool
	// BearerWrites tells that the API requires the token for the writes
	// only (creating, updating and deleting TDs): the directory TD declares
	// nosec and the bearer scheme on the forms of those actions.
	BearerWrites bool
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.DefaultLimit, DefaultLimit)
	def(&c.MaxLimit, DefaultMaxLimit)
	def(&c.MaxPageBytes, DefaultMaxPageBytes)
	defDur(&c.FindTimeout, DefaultFindTimeout)
	defDur(&c.WriteTimeout, DefaultWriteTimeout)
	defDur(&c.ConnectTimeout, DefaultConnectTimeout)
	defDur(&c.Heartbeat, DefaultHeartbeat)
	defDur(&c.SearchTimeout, DefaultSearchTimeout)
	def(&c.MaxQueryLength, DefaultMaxQueryLength)
	def(&c.MaxQueryDepth, DefaultMaxQueryDepth)
	def(&c.MaxSearchNodes, DefaultMaxSearchNodes)
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"defaultLimit", c.DefaultLimit}, {"maxLimit", c.MaxLimit}, {"maxPageBytes", c.MaxPageBytes}, {"maxQueryLength", c.MaxQueryLength}, {"maxQueryDepth", c.MaxQueryDepth}, {"maxSearchNodes", c.MaxSearchNodes}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("tdd config: %s: %d is negative", f.name, f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"findTimeout", c.FindTimeout}, {"writeTimeout", c.WriteTimeout}, {"connectTimeout", c.ConnectTimeout}, {"heartbeat", c.Heartbeat}, {"searchTimeout", c.SearchTimeout}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("tdd config: %s: %s is negative", f.name, f.v))
		}
	}
	if c.DefaultLimit > 0 && c.MaxLimit > 0 && c.DefaultLimit > c.MaxLimit {
		errs = append(errs, fmt.Errorf("tdd config: defaultLimit: %d exceeds maxLimit %d", c.DefaultLimit, c.MaxLimit))
	}
	return errors.Join(errs...)
}

// Handler serves the directory API and the admin API. See the package
// documentation.
type Handler struct {
	deps Deps
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
	// docs holds the directory's TD, per base URL (wellKnown).
	docs *httpapi.DocCache

	// wmu serialises writes.
	wmu sync.Mutex

	// done is closed by Close; it ends event streams. smu orders Close
	// against streams starting (streams.Add must not race streams.Wait).
	done    chan struct{}
	smu     sync.Mutex
	closed  bool
	streams sync.WaitGroup
}

// New builds the handler of deps.
func New(deps Deps, cfg Config, opts ...Option) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.DefaultLimit > cfg.MaxLimit {
		return nil, fmt.Errorf("tdd config: defaultLimit: %d exceeds maxLimit %d", cfg.DefaultLimit, cfg.MaxLimit)
	}
	switch {
	case deps.Directory == nil:
		return nil, errors.New("tdd: deps: Directory is required")
	case deps.PeerID.Validate() != nil:
		return nil, fmt.Errorf("tdd: deps: PeerID: %w", deps.PeerID.Validate())
	case deps.Resolver == nil:
		return nil, errors.New("tdd: deps: Resolver is required")
	}
	if deps.BaseURL != "" {
		u, err := url.Parse(deps.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("tdd: deps: BaseURL: %q is not an http(s) URL without a path", deps.BaseURL)
		}
		deps.BaseURL = strings.TrimSuffix(deps.BaseURL, "/")
	}
	log := slog.New(slog.DiscardHandler)
	for _, opt := range opts {
		if opt != nil {
			opt(&log)
		}
	}
	h := &Handler{deps: deps, cfg: cfg, log: log, done: make(chan struct{}), docs: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 8, MaxBytes: 1 << 20})}
	h.mux = h.routes()
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Close ends every event stream and waits until their handlers returned.
// Requests after Close are still served, but event streams end at once.
// It is idempotent; an http.Server calls it through
// srv.RegisterOnShutdown(func() { h.Close() }).
func (h *Handler) Close() error {
	h.smu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
	h.smu.Unlock()
	h.streams.Wait()
	return nil
}

// startStream registers an event stream that Close waits for; false after
// Close.
func (h *Handler) startStream() bool {
	h.smu.Lock()
	defer h.smu.Unlock()
	if h.closed {
		return false
	}
	h.streams.Add(1)
	return true
}

// Patterns returns the path patterns the handler answers, for a mux that
// mounts it path by path rather than at "/" (where it also answers 404
// problems for unknown paths).
func Patterns() []string {
	return []string{
		"/.well-known/wot", "/things", "/things/", "/search/jsonpath", "/events", "/events/",
		"/api/v1/things", "/api/v1/things/", "/api/v1/peers", "/api/v1/connect",
	}
}

// routes builds the mux: each path with its methods, a 405 problem with
// Allow for the others, and a 404 problem for unknown paths.
func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	routes := []struct {
		path    string
		methods map[string]http.HandlerFunc
	}{
		{"/.well-known/wot", map[string]http.HandlerFunc{http.MethodGet: h.wellKnown}},
		{"/things", map[string]http.HandlerFunc{http.MethodGet: h.listThings, http.MethodPost: h.createAnonymous}},
		{"/things/{id...}", map[string]http.HandlerFunc{
			http.MethodGet:    h.retrieve,
			http.MethodPut:    h.putThing,
			http.MethodPatch:  h.patchThing,
			http.MethodDelete: h.deleteThing,
		}},
		{"/search/jsonpath", map[string]http.HandlerFunc{http.MethodGet: h.searchJSONPath}},
		{"/events", map[string]http.HandlerFunc{http.MethodGet: headEnds(h.events)}},
		{"/events/{type}", map[string]http.HandlerFunc{http.MethodGet: headEnds(h.events)}},
		{"/api/v1/things", map[string]http.HandlerFunc{http.MethodGet: h.adminList, http.MethodPost: h.adminPublish}},
		{"/api/v1/things/{id...}", map[string]http.HandlerFunc{http.MethodDelete: h.adminDelete}},
		{"/api/v1/peers", map[string]http.HandlerFunc{http.MethodGet: h.peers}},
		{"/api/v1/connect", map[string]http.HandlerFunc{http.MethodPost: h.connect}},
	}
	for _, rt := range routes {
		httpapi.HandleMethods(mux, rt.path, rt.methods)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("no such endpoint: %s", r.URL.Path)})
	})
	return mux
}

// headEnds makes a streaming GET handler answer HEAD (which a GET pattern
// also routes to it) with its status and headers only: the handler runs
// with a cancelled context, so it makes its checks, starts the response
// and ends instead of streaming on a connection that expects no body.
func headEnds(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			ctx, cancel := context.WithCancel(r.Context())
			cancel()
			r = r.WithContext(ctx)
		}
		fn(w, r)
	}
}

// base returns the base URL of the API for r.
func (h *Handler) base(r *http.Request) string {
	if h.deps.BaseURL != "" {
		return h.deps.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// thingURL is the URL of the Thing id, selecting publisher if not empty.
func (h *Handler) thingURL(r *http.Request, id string, publisher peer.ID) string {
	u := h.base(r) + "/things/" + url.PathEscape(id)
	if publisher != "" {
		u += "?publisher=" + url.QueryEscape(publisher.String())
	}
	return u
}

// visible returns the caller's visibility predicate, nil if every Thing is
// visible.
func (h *Handler) visible(r *http.Request) func(directory.Entry) bool {
	if h.deps.Visibility == nil {
		return nil
	}
	return h.deps.Visibility(r)
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
