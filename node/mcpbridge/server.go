package mcpbridge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/tdcache"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Resolver finds the Thing a consumer of this node addresses, with the
// node's one rule (own.Things implements it): a publisher named pins it;
// call tells a call (a Thing this node may not see is then 403) from a
// read of the TD. Its errors are *proto.Problem.
type Resolver interface {
	Resolve(ctx context.Context, id string, publisher peer.ID, call bool) (directory.Entry, error)
}

// Invokers calls the Thing a call resolved to: For(publisher) is the
// engine for the node's own Things and the owner node over libp2p
// otherwise. *interact.Router implements it, the node's one rule of how to
// call a Thing.
type Invokers interface {
	For(publisher peer.ID) interact.Invoker
}

// Deps are what a Server works with.
type Deps struct {
	// Directory lists the Things the tools are made of and tells their
	// changes. Required.
	Directory *directory.Directory
	// Self is this node's peer ID, in the server's title. Required.
	Self peer.ID
	// Resolver resolves a called Thing. Required.
	Resolver Resolver
	// Invokers calls the resolved Thing's publisher. Required.
	Invokers Invokers
	// Visible says which Things this node may see (group-scoped Things
	// of groups it is not a member of are not). Required.
	Visible func(directory.Entry) bool
	// Orgs, if set, checks the organisation a TD claims: find_things
	// shows it beside the publisher (organization).
	Orgs did.Lookup
}

// Config configures a Server. The zero value of every field selects its
// default.
type Config struct {
	// PageSize is the number of tools (and resources) of one page of
	// tools/list. Default DefaultPageSize.
	PageSize int
	// CancelWait bounds how long a cancelled tool call waits for the
	// Thing to confirm the cancelAction. Default 5 s.
	CancelWait time.Duration
	// SessionTimeout closes Streamable HTTP sessions idle for that long.
	// Default 30 min.
	SessionTimeout time.Duration
	// CacheTTL is the longest freshness the caching hints of the list
	// results and of resources/read promise (ttlMs, MCP 2026-07-28); a
	// result is fresh for a tenth of the time since the tools last
	// changed, up to CacheTTL (cacheHints). A change of the tools is
	// announced at once all the same (list_changed). Default 1 min.
	CacheTTL time.Duration
	// BearerAuth declares the API's bearer token in the Server Card
	// (every request to the endpoint carries it).
	BearerAuth bool
	// MaxThings bounds the learned Things whose actions are tools (the
	// node's own Things always are): those found by find_things lately
	// and, while there is room, those learned first. Every Thing stays
	// findable; find_things makes those it returns tools, forgetting the
	// tools of the Thing found least recently. Default DefaultMaxThings.
	MaxThings int
}

// DefaultPageSize is the default Config.PageSize.
const DefaultPageSize = 100

// DefaultMaxThings is the default Config.MaxThings: a tool list longer
// than a model can use, and at ~5 KB of heap a Thing's tools (measured
// over the directory lab's Things), 5 MB; a million Things would take
// gigabytes.
const DefaultMaxThings = 1000

func (c Config) withDefaults() Config {
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.CancelWait == 0 {
		c.CancelWait = 5 * time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 30 * time.Minute
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = time.Minute
	}
	if c.MaxThings == 0 {
		c.MaxThings = DefaultMaxThings
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.PageSize < 0 {
		errs = append(errs, fmt.Errorf("mcpbridge: PageSize %d is negative", c.PageSize))
	}
	if c.CancelWait < 0 {
		errs = append(errs, fmt.Errorf("mcpbridge: CancelWait %v is negative", c.CancelWait))
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("mcpbridge: SessionTimeout %v is negative", c.SessionTimeout))
	}
	if c.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("mcpbridge: CacheTTL %v is negative", c.CacheTTL))
	}
	if c.MaxThings < 0 {
		errs = append(errs, fmt.Errorf("mcpbridge: MaxThings %d is negative", c.MaxThings))
	}
	return errors.Join(errs...)
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger sends the package's logs to log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// thingKey names a Thing: (publisher, id).
type thingKey struct {
	publisher peer.ID
	id        string
}

// exposed is what the server offers of one Thing.
type exposed struct {
	seq    uint64
	tools  []string // sorted
	digest [32]byte // of the tools' definitions
}

// Server is the node as an MCP server (see the package documentation).
// It is safe for concurrent use.
type Server struct {
	deps Deps
	cfg  Config
	log  *slog.Logger
	mcp  *mcp.Server
	http http.Handler
	tds  *tdcache.Cache

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // serialises syncs; guards things and learned
	things map[thingKey]exposed
	// learned are the learned Things whose tools the server may offer,
	// at most Config.MaxThings, the one found least recently first out
	// (forget removes its tools).
	learned *simplelru.LRU[thingKey, struct{}]

	// Changes of the directory wait here while no MCP session is open:
	// building a Thing's tools (parse its TD, derive schemas, hash them)
	// for every Thing the node learns costs every node CPU that only a
	// connected MCP client can use. The first session, and any tools/
	// request, applies them (flush).
	pmu     sync.Mutex
	pending map[thingKey]struct{}
	resync  bool // a whole Refresh is owed
	// fmu serialises flushes: a request that flushes while another flush
	// applies what it took waits for it, so it never sees half the tools.
	fmu sync.Mutex
	// changedAt is when the tools last changed (UnixNano): the freshness
	// of what the server lists follows it (cacheHints).
	changedAt atomic.Int64
}

// Version is the server version the node reports in MCP's initialize.
var Version = "dev"

// New returns the Server of deps; it follows the directory until Close.
func New(deps Deps, cfg Config, opts ...Option) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Directory == nil:
		return nil, errors.New("mcpbridge: Deps.Directory is nil")
	case deps.Self == "":
		return nil, errors.New("mcpbridge: Deps.Self is empty")
	case deps.Resolver == nil:
		return nil, errors.New("mcpbridge: Deps.Resolver is nil")
	case deps.Invokers == nil:
		return nil, errors.New("mcpbridge: Deps.Invokers is nil")
	case deps.Visible == nil:
		return nil, errors.New("mcpbridge: Deps.Visible is nil")
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Server{deps: deps, cfg: cfg, log: o.log, tds: tdcache.New(0), things: map[thingKey]exposed{}, pending: map[thingKey]struct{}{}, resync: true}
	s.learned, _ = simplelru.NewLRU(cfg.MaxThings, func(k thingKey, _ struct{}) { s.forget(k) }) // size > 0
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "lmosnode", Title: "LMOS node " + deps.Self.String(), Version: Version}, &mcp.ServerOptions{
		Instructions: instructions,
		PageSize:     cfg.PageSize,
		// A session that starts finds the tools of every Thing known.
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { s.flush() },
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{},
			// No prompts, but prompts/list answers (an empty list, as
			// the SDK serves it): 2026-07-28 asks a server that answers
			// a method to declare it.
			Prompts: &mcp.PromptCapabilities{},
		},
		SetCacheable: s.cacheHints,
	})
	s.addFixedTools()
	s.changedAt.Store(time.Now().UnixNano())
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "tools/") {
				s.flush()
			}
			return next(ctx, method, req)
		}
	})
	server := func(*http.Request) *mcp.Server { return s.mcp }
	s.http = endpoint{
		stateful: mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
			SessionTimeout: cfg.SessionTimeout,
			Logger:         o.log,
		}),
		// 2026-07-28: closing a request's response stream cancels it.
		stateless: mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true,
			Logger:                       o.log,
		}),
		server: s.ctx,
	}
	ch, unsubscribe, err := deps.Directory.Subscribe("")
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("mcpbridge: following the directory: %w", err)
	}
	s.wg.Go(func() { s.follow(ch, unsubscribe) })
	return s, nil
}

// instructions tell an MCP host what the node offers.
const instructions = `This is an LMOS node: a peer of a federation of agents and tools described by signed W3C WoT Thing Descriptions.
Each action of an agent (lmos:Agent) or tool (lmos:Tool) the node knows, on this node or on any other, is one tool here; its description names the Thing and its publisher. A node that knows many Things offers the tools of its own and of a bounded number of others, those found lately first.
find_things searches the federation's directory (capability with a semver range, type, vendor, free text, group), makes the Things it finds tools, and returns their tool names.
read_property reads a property of a Thing; resources lmos://things/{id} are the Things' descriptions.`

// Handler is the Streamable HTTP endpoint (mount it at /mcp).
func (s *Server) Handler() http.Handler { return s.http }

// MCP returns the MCP server, e.g. to run it on another transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Close stops following the directory, ends the requests in flight and
// closes the MCP sessions.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	return nil
}

// follow keeps the tools in line with the directory's events until
// Close; an overflow (the server fell behind) resubscribes and resyncs.
func (s *Server) follow(ch <-chan directory.Event, unsubscribe func()) {
	for {
		overflow := false
	events:
		for {
			select {
			case <-s.ctx.Done():
				unsubscribe()
				return
			case ev, ok := <-ch:
				if !ok {
					break events
				}
				if ev.Type == directory.EventOverflow {
					overflow = true
					break events
				}
				s.changed(thingKey{ev.Publisher, ev.ThingID})
			}
		}
		unsubscribe()
		if !overflow {
			return // the directory closed
		}
		var err error
		if ch, unsubscribe, err = s.deps.Directory.Subscribe(""); err != nil {
			s.log.Warn("mcp: directory subscription lost", "err", err)
			return
		}
		s.Refresh()
	}
}

// sessions reports whether an MCP session is open.
func (s *Server) sessions() bool {
	for range s.mcp.Sessions() {
		return true
	}
	return false
}

// maxPending bounds the changes owed Thing by Thing: past it, a whole
// Refresh is owed instead, so that a node that learns a large federation
// while no MCP session is open keeps no list of every Thing it learned.
const maxPending = 4096

// changed brings Thing k's tools in line with the directory now if a
// session is open (its client gets list_changed), else when one opens.
func (s *Server) changed(k thingKey) {
	s.owe(func() {
		switch {
		case s.resync: // the refresh owed covers k
		case len(s.pending) >= maxPending:
			s.resync, s.pending = true, map[thingKey]struct{}{}
		default:
			s.pending[k] = struct{}{}
		}
	})
}

// owe records a change with mark and applies what is owed if a session
// is open.
func (s *Server) owe(mark func()) {
	s.pmu.Lock()
	mark()
	s.pmu.Unlock()
	if s.sessions() {
		s.flush()
	}
}

// flush applies the changes owed.
func (s *Server) flush() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.pmu.Lock()
	resync, keys := s.resync, s.pending
	s.resync, s.pending = false, map[thingKey]struct{}{}
	s.pmu.Unlock()
	if resync {
		s.refresh()
		return
	}
	for k := range keys {
		s.update(k)
	}
}

// Refresh brings every tool in line with the directory and what this
// node may see (now if a session is open, else when one opens): the
// composition root calls it when the node's group memberships change.
func (s *Server) Refresh() {
	s.owe(func() { s.resync = true })
}

// refresh is Refresh, now: the node's own Things, then learned ones in
// id order while there is room (MaxThings), then those it offered, which
// may have gone.
func (s *Server) refresh() {
	seen := map[thingKey]bool{}
	for _, q := range []directory.Query{
		{Type: "tool", Publisher: s.deps.Self},
		{Type: "agent", Publisher: s.deps.Self},
		{Type: "tool", Limit: s.cfg.MaxThings},
		{Type: "agent", Limit: s.cfg.MaxThings},
	} {
		q.Visible, q.ByID = s.deps.Visible, true
		res, err := s.deps.Directory.Search(q)
		if err != nil {
			s.log.Warn("mcp: listing Things", "err", err)
			return
		}
		for _, e := range res.Entries {
			k := thingKey{e.Publisher, e.ThingID}
			if !seen[k] {
				seen[k] = true
				s.update(k)
			}
		}
	}
	s.mu.Lock()
	var gone []thingKey
	for k := range s.things {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	s.mu.Unlock()
	for _, k := range gone {
		s.update(k)
	}
}

// admit makes the learned Things of es tools (the node's own are): the
// Things a find returned, so that their tools can be called. Past
// MaxThings, the Things found least recently lose theirs.
func (s *Server) admit(es []directory.Entry) {
	for _, e := range es {
		k := thingKey{e.Publisher, e.ThingID}
		if !e.Own {
			s.mu.Lock()
			s.learned.Add(k, struct{}{})
			s.mu.Unlock()
		}
		s.update(k)
	}
}

// forget removes the tools of Thing k (s.mu held).
func (s *Server) forget(k thingKey) {
	if old, had := s.things[k]; had {
		s.mcp.RemoveTools(old.tools...)
		s.changedAt.Store(time.Now().UnixNano())
		delete(s.things, k)
	}
}

// update makes the tools of Thing k what the directory holds now.
func (s *Server) update(k thingKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.things[k]
	e, ok := s.deps.Directory.Get(k.publisher, k.id)
	if !ok || e.Tombstone || !s.deps.Visible(e) || !agentOrTool(e.Types) {
		s.learned.Remove(k) // a learned Thing: its tools go with it (forget)
		s.forget(k)         // an own Thing
		return
	}
	if !e.Own && !s.learned.Contains(k) {
		if s.learned.Len() >= s.cfg.MaxThings {
			s.forget(k) // not offered: no room
			return
		}
		s.learned.Add(k, struct{}{})
	}
	if had && old.seq == e.Seq {
		return
	}
	td, err := s.tds.TD(e)
	if err != nil {
		s.log.Warn("mcp: unreadable TD", "thing", k.id, "publisher", k.publisher, "err", err)
		return
	}
	tools := s.toolsOf(e, td)
	names := make([]string, 0, len(tools))
	defs := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.tool.Name)
		defs = append(defs, t.tool)
	}
	slices.Sort(names)
	raw, _ := json.Marshal(defs) // maps and strings of a parsed TD
	digest := sha256.Sum256(raw)
	if had && old.digest == digest {
		// A new version with the same actions: no change for MCP
		// clients, no list_changed.
		s.things[k] = exposed{seq: e.Seq, tools: old.tools, digest: digest}
		return
	}
	var stale []string
	for _, n := range old.tools {
		if _, ok := slices.BinarySearch(names, n); !ok {
			stale = append(stale, n)
		}
	}
	if len(stale) > 0 {
		s.mcp.RemoveTools(stale...)
	}
	for _, t := range tools {
		s.mcp.AddTool(t.tool, t.handler)
	}
	s.changedAt.Store(time.Now().UnixNano())
	s.things[k] = exposed{seq: e.Seq, tools: names, digest: digest}
}

// agentOrTool reports whether types make a Thing the bridge exposes.
func agentOrTool(types []string) bool {
	return slices.Contains(types, lmosproto.TypeAgent) || slices.Contains(types, lmosproto.TypeTool)
}

// ToolNames returns the names of the tools of Thing id published by
// publisher, sorted; nil if the server exposes none.
func (s *Server) ToolNames(publisher peer.ID, id string) []string {
	s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.things[thingKey{publisher, id}].tools)
}
