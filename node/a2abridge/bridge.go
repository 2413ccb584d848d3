package a2abridge

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const (
	// DefaultRetention is how long a finished task can still be read
	// (GetTask), like the HTTP binding's invocations.
	DefaultRetention = 5 * time.Minute
	// DefaultMaxTasks bounds the tasks the bridge keeps: at the bound, a
	// new task pushes out the one finished first, and is refused when all
	// still run.
	DefaultMaxTasks = 1024
	// DefaultKeepAlive is the interval of comment lines on idle streams.
	DefaultKeepAlive = 15 * time.Second
	// DefaultWriteTimeout bounds one write to a stream.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultCallTimeout bounds a call of an imported A2A agent that does
	// not stream (SendMessage); a streaming call is bounded by the
	// engine's action timeout only.
	DefaultCallTimeout = 5 * time.Minute
	// maxBody bounds a JSON-RPC request.
	maxBody = 4 << 20
	// cancelWait bounds how long CancelTask waits for the agent to confirm.
	cancelWait = 10 * time.Second
)

// Config configures a Bridge. The zero value of every field selects its
// default.
type Config struct {
	// Retention: see DefaultRetention.
	Retention time.Duration
	// MaxTasks: see DefaultMaxTasks.
	MaxTasks int
	// KeepAlive: see DefaultKeepAlive.
	KeepAlive time.Duration
	// WriteTimeout: see DefaultWriteTimeout.
	WriteTimeout time.Duration
	// BearerAuth tells that the API requires "Authorization: Bearer
	// <token>": the cards then declare that security scheme. The bridge
	// itself checks nothing (the API's guard does).
	BearerAuth bool
}

func (c Config) withDefaults() Config {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.MaxTasks == 0 {
		c.MaxTasks = DefaultMaxTasks
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
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Retention", c.Retention}, {"KeepAlive", c.KeepAlive}, {"WriteTimeout", c.WriteTimeout}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("a2abridge: %s %v is negative", f.name, f.v))
		}
	}
	if c.MaxTasks < 0 {
		errs = append(errs, fmt.Errorf("a2abridge: MaxTasks %d is negative", c.MaxTasks))
	}
	return errors.Join(errs...)
}

// Resolver finds the Thing a request addresses (gateway.Resolver: the
// node's one rule, own.Things implements it). Its errors are
// *proto.Problem (404, 403, 300).
type Resolver interface {
	Resolve(ctx context.Context, id string, publisher peer.ID, call bool) (directory.Entry, error)
}

// TDs gives the parsed TD of a directory entry; own.Things implements it.
type TDs interface {
	TDOf(publisher peer.ID, id string) (*lmosproto.TD, bool)
}

// Invokers calls the agent a request resolved to: For(publisher) is the
// engine for the node's own Things and the owner node over libp2p
// otherwise. *interact.Router implements it, the node's one rule of how to
// call a Thing.
type Invokers interface {
	For(publisher peer.ID) interact.Invoker
}

// Publisher publishes an own Thing (tdd.Publisher; own.Things implements
// it): `lmosnode a2a import` publishes the imported agents with it.
type Publisher interface {
	Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error)
}

// Deps are what a Bridge works with. All are required.
type Deps struct {
	// Directory lists the agents the node knows.
	Directory *directory.Directory
	// Visible hides the Things this node may not see (group-scoped Things
	// of groups it is not a member of).
	Visible func(directory.Entry) bool
	// Resolver finds the agent a request addresses.
	Resolver Resolver
	// TDs parses the TDs of directory entries.
	TDs TDs
	// Self is this node's peer ID, named in the node's card.
	Self peer.ID
	// Invokers calls the resolved agent's publisher.
	Invokers Invokers
	// Key is the node's signing key: cards are signed with it.
	Key ed25519.PrivateKey
	// Publisher publishes imported agents.
	Publisher Publisher
	// Client reads the cards of imported agents and calls them; the
	// node's own Things use its backends (own.Deps.Kinds).
	Client *Client
	// Orgs, if set, checks the organisation a TD claims: cards and the
	// index show it beside the publisher.
	Orgs Orgs
}

// Orgs is what the bridge asks about the organisations TDs claim
// (*did.Members).
type Orgs interface {
	did.Lookup
	// Generation changes whenever a claim's check may have changed.
	Generation() uint64
}

// organization is the organisation td of publisher p claims, checked; nil
// without a claim or without Deps.Orgs.
func (b *Bridge) organization(p peer.ID, td *lmosproto.TD) *did.Organization {
	if b.deps.Orgs == nil {
		return nil
	}
	return b.deps.Orgs.Of(p, td.Organization())
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log    *slog.Logger
	client *http.Client
}

// WithLogger sends the bridge's logs to log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithHTTPClient makes a Client fetch cards and call imported agents
// with c (default: a client of its own).
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

func applyOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), client: &http.Client{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Bridge serves every lmos:Agent the node knows as an A2A agent and calls
// imported A2A agents (see the package documentation). It is safe for
// concurrent use.
type Bridge struct {
	deps   Deps
	cfg    Config
	log    *slog.Logger
	signer *signer
	mux    *http.ServeMux
	tasks  tasks
	docs   *cardDocs // the cards and the index, rendered once per revision

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns the Bridge of deps.
func New(deps Deps, cfg Config, opts ...Option) (*Bridge, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Directory == nil:
		return nil, errors.New("a2abridge: Deps.Directory is nil")
	case deps.Visible == nil:
		return nil, errors.New("a2abridge: Deps.Visible is nil")
	case deps.Resolver == nil:
		return nil, errors.New("a2abridge: Deps.Resolver is nil")
	case deps.TDs == nil:
		return nil, errors.New("a2abridge: Deps.TDs is nil")
	case deps.Self == "":
		return nil, errors.New("a2abridge: Deps.Self is empty")
	case deps.Invokers == nil:
		return nil, errors.New("a2abridge: Deps.Invokers is nil")
	case len(deps.Key) != ed25519.PrivateKeySize:
		return nil, errors.New("a2abridge: Deps.Key is not an Ed25519 private key")
	case deps.Publisher == nil:
		return nil, errors.New("a2abridge: Deps.Publisher is nil")
	case deps.Client == nil:
		return nil, errors.New("a2abridge: Deps.Client is nil")
	}
	o := applyOptions(opts)
	b := &Bridge{deps: deps, cfg: cfg, log: o.log, signer: newSigner(deps.Key),
		tasks: tasks{retention: cfg.Retention, max: cfg.MaxTasks, byID: map[string]*task{}}}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.routes()
	return b, nil
}

// Close ends the tasks the bridge follows and waits for them.
func (b *Bridge) Close() error {
	b.cancel()
	b.wg.Wait()
	return nil
}
