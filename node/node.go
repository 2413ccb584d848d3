package node

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/agentsjson"
	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/aitp"
	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/console"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/discovery"
	"github.com/lmosnode/lmosnode/node/fanout"
	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/logroute"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	"github.com/lmosnode/lmosnode/node/metrics"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	"github.com/lmosnode/lmosnode/node/own"
	"github.com/lmosnode/lmosnode/node/p2p"
	"github.com/lmosnode/lmosnode/node/rotation"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/trust"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
	"github.com/lmosnode/lmosnode/node/version"
	"github.com/lmosnode/lmosnode/node/wsgateway"
)

// shutdownTimeout bounds how long Close waits for in-flight API requests;
// after shutdownGrace of it, the requests still running are cancelled
// (their contexts end), which ends a stream that no closer above reached
// (an MCP client's standalone stream opened as its session was closed).
const (
	shutdownTimeout = 5 * time.Second
	shutdownGrace   = time.Second
)

// Node is one running lmosnode: identity, datastore, libp2p host, directory
// of Things, DHT, gossipsub, the federation that keeps the directory in
// step with other nodes, and the local HTTP API. Its methods are safe for
// concurrent use.
type Node struct {
	cfg    config.Config
	log    *slog.Logger
	key    crypto.PrivKey
	peerID peer.ID
	didKey string
	// apiToken is the API's token (access.go), tokenForAll whether every
	// request must carry it.
	apiToken    string
	tokenForAll bool
	// trust is the operator's trust list, trustAPI its routes (trust.go).
	trust    *trust.List
	trustAPI *trustapi.Handler
	// didResolver resolves DIDs: organisations' (orgs checks the
	// organisations TDs claim, orgid.go) and DID-WBA callers' (anp.go).
	didResolver *did.Resolver
	orgs        *did.Members
	// keys are the key records the node knows (keys.go).
	keys *rotation.Registry

	unrouteLogs func()
	// Observability (observe.go): the node's metrics, its tracer provider
	// (nil without tracing) and, when the node built it from the
	// environment, the provider to shut down.
	metrics      *metrics.Metrics
	tracing      trace.TracerProvider
	ownTracing   *sdktrace.TracerProvider
	bootstrapped atomic.Bool

	store    *datastore.Store
	host     host.Host
	asked    func(peer.ID) // marks a peer the node asks (p2p.KeepAsked)
	nat      p2p.NAT       // reachability, from the host's events
	punch    p2p.Punch     // hole punching again (docs/nat.md)
	dir      *directory.Directory
	dht      *kaddht.IpfsDHT
	ps       *pubsub.PubSub // nil without Config.Gossip
	psCancel context.CancelFunc
	fed      *federation.Federation
	disc     *discovery.Service
	tdd      *tdd.Handler
	ws       *wsgateway.Gateway
	wsAgent  *wsgateway.AgentGateway
	mqtt     *mqttgw.Gateway // nil without Config.MQTT
	fanout   *fanout.Fanout  // nil without Config.Gossip

	// Groups (groups.go): the group service and its API.
	groups   *groupsvc.Service
	groupAPI *groupapi.Handler

	// Interactions (invoke.go): the node's own Things with the engine that
	// serves them, the libp2p server and client of proto.ProtocolInteract,
	// the router that picks between them, and the HTTP binding.
	own            *own.Things
	interactServer *interact.Server
	interactClient *interact.Client
	router         *interact.Router
	bridgeRouter   *interact.Router // the MCP and A2A bridges' (invoke.go)
	gateway        *gateway.Handler
	mcp            *mcpbridge.Server  // the MCP server (mcp.go)
	mcpImports     *mcpbridge.Imports // MCP servers imported as Things (mcp.go); built by Start

	// The A2A bridge (a2a.go): the client of imported A2A agents, built
	// before the own Things that use its backends, and the bridge.
	a2aClient *a2abridge.Client
	a2a       *a2abridge.Bridge
	// The AI Catalog, its ARD search and import (aicatalog.go); the MCP
	// Server Card.
	aiCatalog  *aicatalog.Handler
	serverCard http.Handler
	// The Agora and AITP endpoints of the agents (agora.go).
	agora *agora.Server
	aitp  *aitp.Server
	// ANP (anp.go): the node's did:wba identity (nil without
	// Config.ANP.DID), the client of imported ANP agents, the surface.
	anpID     *anp.Identity
	anpClient *anp.Client
	anp       *anp.Server
	// agents.json (agentsjson.go): the client of imported flows, built
	// with the own Things, and the export and import routes.
	agentsJSONClient *agentsjson.Client
	agentsJSON       *agentsjson.Handler

	// console is the web console at / of the API (api.go).
	console *console.Console

	// ctx is cancelled by Close; it scopes the node's own goroutines.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	api     *http.Server
	// apiServing is set once the API serves (readiness).
	apiServing bool
	startedAt  time.Time         // when Start ran, for api.NodeInfo.Started
	apiLn      *httpapi.Listener // the API's listener, under APILimits
	apiAddr    string
	// apiCancel ends the base context of every API request.
	apiCancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// New builds a node from cfg: it fills fallbacks, validates cfg, loads (or
// creates) the identity key, opens the datastore and the directory, and
// builds every component in the order the package documentation gives
// (the loop between gossipsub, the group service and the federation is
// broken by that order, not by hooks set later). It binds no socket;
// Start does. If a step fails, what was built is torn down and the errors
// are joined.
func New(cfg config.Config, opts ...Option) (_ *Node, err error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	cfg = cfg.WithFallbacks()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, log: o.logger, ctx: ctx, cancel: cancel}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.teardown())
		}
	}()

	var b built
	for _, stage := range []func() error{
		func() error { return n.observeAndIdentify(&o) },
		func() error { return n.buildNet(&o, &b) },
		func() error { return n.buildServices(&o, &b) },
		func() error { return n.buildSurfaces(&o, &b) },
	} {
		if err := stage(); err != nil {
			return nil, err
		}
	}
	n.log.Debug("node built", "peer", n.peerID, "home", cfg.Home, "gossip", cfg.Gossip, "dhtMode", cfg.DHTMode)
	return n, nil
}

// built carries what New's stages share but the Node does not keep.
type built struct {
	// things and ops are the caches of verified records and group
	// operations the DHT's validators share with the federation and the
	// group service.
	things lmosdht.ThingValidator
	ops    *groups.OpCache
	// signing is the identity as an Ed25519 key.
	signing ed25519.PrivateKey
	// access is the group service, or what a test put in its place.
	access groupAccess
}

// observeAndIdentify routes the libraries' logs, makes the metrics and
// tracing, prepares the home and loads the identity and the API token.
func (n *Node) observeAndIdentify(o *options) error {
	cfg := n.cfg
	var err error
	n.unrouteLogs = logroute.Register(o.logger.Handler(), o.libp2pLevel)
	n.metrics = metrics.New()
	n.tracing = o.tracing
	if n.tracing == nil {
		if n.ownTracing, err = tracingFromEnv(n.ctx); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if n.ownTracing != nil {
			n.tracing = n.ownTracing
		}
	}

	if _, err := homedir.Init(cfg.Home); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	key, _, err := homedir.LoadOrCreateIdentity(cfg.Home)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.key = key
	if n.peerID, err = peer.IDFromPrivateKey(key); err != nil {
		return fmt.Errorf("node: identity: %w", err)
	}
	if n.didKey, err = homedir.DIDKeyOf(key.GetPublic()); err != nil {
		return fmt.Errorf("node: identity: %w", err)
	}
	n.apiToken, n.tokenForAll = cfg.APIToken, cfg.TokenForAllRequests()
	if n.apiToken == "" {
		if n.apiToken, _, err = homedir.LoadOrCreateAPIToken(cfg.Home); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}

	return nil
}

// buildNet opens the datastore, builds the host (following its NAT
// state), the directory and the DHT.
func (n *Node) buildNet(o *options, b *built) error {
	cfg := n.cfg
	var err error
	n.store, err = datastore.Open(datastore.Deps{Self: n.peerID},
		datastore.Config{Dir: filepath.Join(cfg.Home, homedir.DatastoreDir), CacheMB: cfg.Datastore.CacheMB},
		datastore.WithLogger(o.logger.With("component", "datastore")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.host, err = p2p.NewHost(cfg, n.key, p2p.HostOptions{Registerer: n.metrics.Registry(), Gater: o.gater, Reachability: o.reachability,
		Logger: o.logger.With("component", "p2p"), Punch: &n.punch})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.asked, err = p2p.KeepAsked(n.host); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := p2p.FollowNAT(n.ctx, n.host, &n.nat, &n.wg); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.punch.Run(n.ctx, n.host, &n.wg)
	n.dir, err = directory.Open(directory.Deps{Datastore: n.store, Self: n.peerID},
		cfg.Directory(),
		directory.WithLogger(o.logger.With("component", "directory")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	// One cache of verified records for the DHT and the federation: a
	// record that arrives by gossip and again by a DHT put (or a sync) is
	// verified once.
	b.things = lmosdht.ThingValidator{Cache: lmosdht.NewRecordCache(0)}
	// Likewise one cache of verified group operations for the DHT's
	// validator of group logs and the group service.
	b.ops = groups.NewOpCache(0)
	if err := n.buildKeys(b); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.dht, err = p2p.NewDHT(n.ctx, cfg, n.host, n.store, b.things, b.ops); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// buildServices builds the services in the order that breaks the loop
// between gossipsub, the group service and the federation: the trust list
// and the intake, the group service, gossipsub, the federation; then the
// A2A client and the own Things.
func (n *Node) buildServices(o *options, b *built) error {
	cfg := n.cfg
	var err error
	b.signing, err = homedir.SigningKey(n.key)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	// The construction order breaks the loop between gossipsub, the group
	// service and the federation (groups.go): the intake, through which
	// every learned record enters the directory, first; then the group
	// service, which hands it the records of group topics; gossipsub, with
	// the service's filters; the federation, with the service as its
	// membership predicate and scoped publisher; and the own Things.
	fedLog := o.logger.With("component", "federation")
	if n.trust, err = trust.New(n.peerID, cfg.Trust); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.buildOrganizations(o)
	if n.trustAPI, err = trustapi.New(trustapi.Deps{List: n.trust, Self: n.peerID, Directory: n.dir,
		Save: func(c trust.Config) error { return config.WriteTrust(cfg.Home, c) }}, trustapi.WithLogger(o.logger)); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	intake, err := federation.NewIntake(federation.IntakeDeps{Directory: n.dir, Self: n.peerID, Validator: b.things, Admit: n.trust.Admits},
		federation.WithLogger(fedLog))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	dht := p2p.CountingDHT{IpfsDHT: n.dht, Count: n.metrics.DHTQuery}
	gdeps := groupsvc.Deps{
		Host:      n.host,
		Key:       b.signing,
		DHT:       dht,
		Datastore: n.store,
		Ops:       b.ops,
		// Both hooks run only once the node is started.
		OnChange:     n.groupChanged,
		OnMemberSync: func(_ string, p peer.ID) { n.fed.SyncMember(p) },
		Things:       intake,
	}
	if cfg.Gossip {
		gdeps.TopicScore = p2p.TopicScore()
	}
	if n.groups, err = groupsvc.New(gdeps, groupsvc.Config{}, groupsvc.WithLogger(o.logger.With("component", "groups"))); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.groupAPI, err = groupapi.New(groupapi.Deps{Groups: n.groups}); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	b.access = o.access
	if b.access == nil {
		b.access = n.groups
	}
	access := b.access
	if cfg.Gossip {
		// Gossipsub lives until its context ends; teardown ends it once
		// the federation has left its topic.
		psCtx, psCancel := context.WithCancel(context.Background())
		n.psCancel = psCancel
		o.tracers = append(o.tracers, n.metrics.GossipTracer(topicKind))
		shards, err := p2p.ShardDiscovery(dht, fedLog)
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if n.ps, err = p2p.NewPubSub(psCtx, n.host, p2p.PubSubOptions{Heartbeat: o.heartbeat, Tracers: o.tracers, Groups: n.groups, Discovery: shards}); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	role, err := federation.ParseRole(cfg.WithFallbacks().Role)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.fed, err = federation.New(federation.Deps{
		Host:      n.host,
		Key:       b.signing,
		Directory: n.dir,
		Intake:    intake,
		DHT:       dht,
		Asked:     n.asked,
		PubSub:    n.ps,
		MemberOf:  access.MemberOf,
		Scoped:    access,
		Allowed:   access.Allowed,
		// Every TD published claims the organisation (docs/identity.md).
		Organization: cfg.Organization,
	}, federation.Config{SyncOnConnect: cfg.SyncOnConnect, PresenceInterval: time.Duration(cfg.Liveness.WithDefaults().OfflineAfter) / 5, BeatRate: cfg.Liveness.BeatRate,
		Role: role, LightPast: cfg.Quota.WithDefaults().MaxLearnedBytes / 2, NoLegacyAnnounce: cfg.NoLegacyAnnounce},
		federation.WithLogger(fedLog))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.dir.SetValuer(budgetValuer(n.trust, access.MemberOf, n.host))
	return n.buildOwn(o, b)
}

// buildOwn builds the node's own Things over the federation, with the
// A2A client whose backends serve the imported A2A agents among them.
func (n *Node) buildOwn(o *options, b *built) error {
	var err error
	if n.a2aClient, err = a2abridge.NewClient(a2abridge.ClientConfig{}, a2abridge.WithLogger(o.logger.With("component", "a2a"))); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildANPClient(b, o); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if n.agentsJSONClient, err = agentsjson.NewClient(agentsjson.ClientConfig{}, agentsjson.WithLogger(o.logger.With("component", "agentsjson"))); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.own, err = own.New(own.Deps{
		Directory: n.dir,
		Self:      n.peerID,
		Publisher: n.fed,
		Access:    b.access,
		Fetcher:   n.fed,
		Trust:     n.trust,
		Kinds: map[string]func(string) (interact.Backend, error){
			a2abridge.KindA2A:         n.a2aClient.Backend,
			anp.KindANP:               n.anpClient.Backend,
			agentsjson.KindAgentsJSON: n.agentsJSONClient.Backend,
		},
	}, own.Config{}, own.WithLogger(o.logger.With("component", "interact")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// buildSurfaces builds discovery, the interactions and every surface of
// the API over the services: gateways, the HTTP binding, MCP, A2A, the
// directory API and the console.
func (n *Node) buildSurfaces(o *options, b *built) error {
	cfg := n.cfg
	var err error
	bootstrap, err := p2p.BootstrapPeers(cfg)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	dcfg := discovery.DefaultConfig()
	dcfg.MDNS = cfg.MDNS
	dcfg.Bootstrap = bootstrap
	dcfg.MaxPeers = max(cfg.ConnMgr.Low, 1)
	n.disc, err = discovery.New(discovery.Deps{Host: n.host, Routing: n.dht}, dcfg,
		discovery.WithLogger(o.logger.With("component", "discovery")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildInteract(); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildGateways(); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	gwDeps := gateway.Deps{
		Resolver: n.own,
		// The HTTP binding's consumers; a call of an own Thing is also
		// the owner side's.
		Invokers: interact.InstrumentRouter(n.router, interact.SideConsumer, "http", n.instrumentation()),
		Trust:    n.trust,
		Orgs:     n.orgs,
	}
	if n.mqtt != nil {
		gwDeps.Broker = n.mqtt
	}
	n.gateway, err = gateway.New(gwDeps, gateway.Config{BearerAuth: n.tokenForAll, WebSocketPath: api.PathWS},
		gateway.WithLogger(o.logger.With("component", "gateway")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildMCP(); err != nil {
		return err
	}
	if err := n.buildA2A(b.signing, o.logger); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildAICatalog(b.signing, o.logger); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := n.buildAgora(o.logger); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.buildANP(b, o)
	if err := n.buildAgentsJSON(o.logger); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.tdd, err = tdd.New(tdd.Deps{
		Directory: n.dir,
		PeerID:    n.peerID,
		Resolver:  n.own,
		Publisher: n.own,
		Finder:    n.fed,
		Peers:     peerList{n.disc, n.host},
		// Every caller of the API is this node's owner: one view.
		Visibility: func(*http.Request) func(directory.Entry) bool { return n.own.Visible },
		// Directory consumers (exploreDirectory) get the consumer views
		// the HTTP binding serves at /things/{id}/td.
		ConsumerView: n.gateway.ConsumerViewOf,
		Trust:        n.trust,
		Orgs:         n.orgs,
	}, tdd.Config{BearerAuth: n.tokenForAll, BearerWrites: !n.tokenForAll}, tdd.WithLogger(o.logger.With("component", "tdd")))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.observeSources()
	if n.console, err = console.New(console.Deps{}, console.Config{}, console.WithLogger(o.logger.With("component", "console"))); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// Start makes the host listen on Config.Listen, starts the federation
// (sync protocol, announce topic, republication of the node's own Things),
// the group service (on gossipsub), discovery (mDNS, bootstrap peers, DHT
// rendezvous), the gossip fan-out of its own Things' events and, with
// Config.MQTT, the MQTT gateway (both following the own Things through
// the directory's events);
// bootstraps the DHT, serves the HTTP API on Config.API and writes the api
// file. ctx bounds the start itself, not the node's lifetime: the node runs
// until Close. If Start fails, the caller still calls Close.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return errors.New("node: start: node is closed")
	case n.started:
		return errors.New("node: start: already started")
	}
	n.started = true
	n.startedAt = time.Now()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}

	if err := p2p.Listen(n.host, n.cfg); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	if err := n.followClaims(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	if err := n.fed.Start(ctx); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	if err := n.groups.Start(ctx, n.ps); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	if err := n.startKeys(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	if err := n.disc.Start(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	// The fan-out and the MQTT gateway follow the own Things through the
	// directory's events.
	if n.fanout != nil {
		if err := n.fanout.Follow(n.dir); err != nil {
			return fmt.Errorf("node: start: fanout: %w", err)
		}
	}
	if n.mqtt != nil {
		if err := n.mqtt.Start(); err != nil {
			return fmt.Errorf("node: start: mqtt: %w", err)
		}
		if err := n.mqtt.Follow(n.dir); err != nil {
			return fmt.Errorf("node: start: mqtt: %w", err)
		}
	}
	// A refresh of the routing table; kad-dht refreshes again by itself
	// whenever discovery connects peers to a table that runs low.
	if err := n.dht.Bootstrap(n.ctx); err != nil {
		n.log.Warn("dht bootstrap failed; kad-dht refreshes its table again as peers connect", "err", err)
	}

	// MCP servers imported earlier publish their tools again.
	if err := n.buildMCPImports(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", n.cfg.API)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("node: start: api: %s: %w: the port is taken (another lmosnode?); choose another with --api, port 0 picks a free one", n.cfg.API, err)
	}
	if err != nil {
		return fmt.Errorf("node: start: api: %s: %w", n.cfg.API, err)
	}
	n.apiAddr = ln.Addr().String()
	n.api = api.NewServer(n.apiHandler(), n.cfg.APILimits, n.log)
	base, cancel := context.WithCancel(context.Background())
	n.api.BaseContext, n.apiCancel = func(net.Listener) context.Context { return base }, cancel
	n.apiLn = api.Listener(ln, n.cfg.APILimits)
	srv, limited := n.api, n.apiLn
	n.wg.Go(func() {
		if err := srv.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("api server stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
	n.apiServing = true
	if err := homedir.WriteAPIFile(n.cfg.Home, n.apiURL()); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	// WoT Discovery's DNS-SD advertisement of the directory, with mDNS on
	// and the API off loopback only; a node works without it.
	if err := n.disc.AdvertiseDirectory(ln.Addr()); err != nil {
		n.log.Warn("wot directory not advertised", "err", err)
	}
	n.log.Info("node started", "peer", n.peerID, "addrs", n.Addrs(), "api", n.apiURL())
	return nil
}

// Close stops the node: it ends the API's event streams and followed
// invocations, stops the API (waiting up to 5 s for requests in flight),
// removes the api file, closes the interaction server, client and engine
// (cancelling running interactions), the federation, gossipsub, the DHT,
// the host, the directory and the datastore, and returns their errors
// joined. It is idempotent and safe to call
// concurrently; every call returns the first call's result once the node is
// fully closed.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
		n.closeErr = n.teardown()
		if n.closeErr == nil {
			n.log.Info("node stopped", "peer", n.peerID)
		}
	})
	return n.closeErr
}

// closeAPI ends what the API's requests hold (event streams, sessions,
// followed invocations, WebSocket connections, which Shutdown does not
// close), shuts the API down (waiting up to shutdownTimeout) and removes
// the api file.
func (n *Node) closeAPI() []error {
	var errs []error
	n.mu.Lock()
	srv := n.api
	n.mu.Unlock()
	if n.tdd != nil {
		// Ends open /events streams, which would otherwise hold Shutdown.
		errs = append(errs, n.tdd.Close())
	}
	if n.groupAPI != nil {
		// Ends group message streams likewise.
		errs = append(errs, n.groupAPI.Close())
	}
	if n.mcp != nil {
		// Ends MCP sessions and their streams likewise.
		errs = append(errs, n.mcp.Close())
	}
	if n.mcpImports != nil {
		errs = append(errs, n.mcpImports.Close())
	}
	if n.console != nil {
		// Ends the console's snapshot streams likewise.
		errs = append(errs, n.console.Close())
	}
	if n.gateway != nil {
		// Ends event streams and followed invocations likewise.
		errs = append(errs, n.gateway.Close())
	}
	if n.a2a != nil {
		// Ends A2A streams and followed tasks likewise.
		errs = append(errs, n.a2a.Close())
	}
	if n.agora != nil {
		// Ends Agora conversations and AITP threads likewise.
		errs = append(errs, n.agora.Close(), n.aitp.Close())
	}
	errs = append(errs, n.closeGateways())
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		grace := time.AfterFunc(shutdownGrace, n.apiCancel)
		if err := srv.Shutdown(ctx); err != nil {
			// A request that outlived its cancellation (an MCP client's
			// standalone stream, at times) is cut off: the API is closed
			// all the same, so this is worth a warning, not a failed Close.
			n.log.Warn("api: requests still open after the shutdown timeout; closing them", "timeout", shutdownTimeout, "err", err)
			errs = append(errs, srv.Close())
		}
		grace.Stop()
		n.apiCancel()
		cancel()
		errs = append(errs, homedir.RemoveAPIFile(n.cfg.Home))
	}
	return errs
}

// teardown closes, in reverse order of construction, whatever New and Start
// built.
func (n *Node) teardown() error {
	n.cancel()
	errs := n.closeAPI()
	if n.groups != nil {
		// Before the wait: its membership changes start syncs.
		errs = append(errs, n.groups.Close())
	}
	if n.keys != nil {
		// Before the wait: a record it takes in starts a group move.
		errs = append(errs, n.keys.Close())
	}
	n.wg.Wait()
	if n.didResolver != nil {
		n.didResolver.Close()
	}
	if n.disc != nil {
		errs = append(errs, n.disc.Close())
	}
	if err := n.closeInteract(); err != nil {
		errs = append(errs, fmt.Errorf("interact: %w", err))
	}
	if n.fed != nil {
		if err := n.fed.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.psCancel != nil {
		n.psCancel()
	}
	if n.dht != nil {
		if err := n.dht.Close(); err != nil {
			errs = append(errs, fmt.Errorf("dht: %w", err))
		}
	}
	if n.host != nil {
		if err := n.host.Close(); err != nil {
			errs = append(errs, fmt.Errorf("host: %w", err))
		}
	}
	if n.dir != nil {
		if err := n.dir.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.store != nil {
		if err := n.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("datastore: %w", err))
		}
	}
	if n.ownTracing != nil {
		// Exports the spans still batched.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := n.ownTracing.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("tracing: %w", err))
		}
		cancel()
	}
	if n.unrouteLogs != nil {
		n.unrouteLogs()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: close: %w", err)
	}
	return nil
}

// Directory returns the node's directory of Things: its own and those it
// learned. It is closed by Close.
func (n *Node) Directory() *directory.Directory { return n.dir }

// PubSub returns the node's gossipsub router; nil when Config.Gossip is
// off.
func (n *Node) PubSub() *pubsub.PubSub { return n.ps }

// Config returns the configuration the node runs with (fallbacks filled).
func (n *Node) Config() config.Config { return n.cfg }

// PeerID returns the node's libp2p peer ID.
func (n *Node) PeerID() peer.ID { return n.peerID }

// DIDKey returns the did:key of the node's identity key; it names the same
// publisher as PeerID.
func (n *Node) DIDKey() string { return n.didKey }

// Host returns the node's libp2p host.
func (n *Node) Host() host.Host { return n.host }

// Addrs returns the host's addresses as full multiaddrs ending in
// /p2p/<peer ID>; empty before Start.
func (n *Node) Addrs() []ma.Multiaddr {
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.peerID, Addrs: n.host.Addrs()})
	if err != nil { // impossible: the peer ID is valid
		n.log.Error("encode p2p addrs", "peer", n.peerID, "err", err)
		return nil
	}
	return addrs
}

// APIAddr returns the host:port the API listens on, with the real port when
// Config.API asked for port 0; empty before Start.
func (n *Node) APIAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.apiAddr
}

func (n *Node) apiURL() string {
	if n.apiAddr == "" {
		return ""
	}
	return "http://" + n.apiAddr
}

// Info returns what GET /api/v1/node reports.
func (n *Node) Info() api.NodeInfo {
	addrs := n.Addrs()
	info := api.NodeInfo{
		PeerID:  n.peerID.String(),
		DIDKey:  n.didKey,
		Addrs:   make([]string, len(addrs)),
		Version: version.Version,
	}
	for i, a := range addrs {
		info.Addrs[i] = a.String()
	}
	info.Reachability = n.nat.Reachability()
	if n.fed != nil {
		info.Role = string(n.fed.Role())
		if info.Role == "" {
			info.Role = config.RoleV1
		}
	}
	info.RelayAddrs, info.Relays = p2p.RelayInfo(addrs)
	n.mu.Lock()
	info.APIURL = n.apiURL()
	info.Started = n.startedAt
	n.mu.Unlock()
	return info
}
