package p2p

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	ds "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	record "github.com/libp2p/go-libp2p-record"
	coreconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/version"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ParseReachability parses Config.Reachability: "public", "private", or
// empty for AutoNAT's verdict (unknown).
func ParseReachability(s string) (network.Reachability, error) {
	switch s {
	case "":
		return network.ReachabilityUnknown, nil
	case "public":
		return network.ReachabilityPublic, nil
	case "private":
		return network.ReachabilityPrivate, nil
	}
	return network.ReachabilityUnknown, fmt.Errorf("reachability: %q: want public, private or empty (AutoNAT decides)", s)
}

// NewHost builds the libp2p host described by cfg, with identity key. The
// host does not listen yet: Listen does that in Start, so New binds no
// socket.
//
// With Config.Libp2pMetrics, go-libp2p's metrics (swarm, identify,
// resource manager, event bus, AutoNAT, relay, …) register with reg, the
// node's registry (o.Registerer); without, none are collected.
func NewHost(cfg config.Config, key crypto.PrivKey, o HostOptions) (_ host.Host, err error) {
	reg, gater, forced := o.Registerer, o.Gater, o.Reachability
	if forced == network.ReachabilityUnknown {
		if forced, err = ParseReachability(cfg.Reachability); err != nil {
			return nil, err
		}
	}
	factory, err := addrsFactory(cfg)
	if err != nil {
		return nil, err
	}
	relays, err := newRelaySource(cfg)
	if err != nil {
		return nil, err
	}
	cm, err := connmgr.NewConnManager(cfg.ConnMgr.Low, cfg.ConnMgr.High,
		connmgr.WithGracePeriod(time.Duration(cfg.ConnMgr.Grace)))
	if err != nil {
		return nil, fmt.Errorf("connMgr: %w", err)
	}
	rm, err := newResourceManager(cfg.Resources, cfg.Libp2pMetrics)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("resources: %w", err), cm.Close())
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.NoListenAddrs,
		libp2p.UserAgent("lmosnode/" + version.Version),

		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(libp2pquic.NewTransport),
		libp2p.Transport(websocket.New),

		// Noise first: every libp2p implementation speaks it; TLS for
		// peers that prefer it.
		libp2p.Security(noise.ID, noise.New),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),

		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
	}
	if d := time.Duration(cfg.ConnMgr.DialTimeout); d > 0 {
		opts = append(opts, libp2p.SwarmOpts(swarm.WithDialTimeoutLocal(d)), libp2p.WithDialTimeout(d))
	}
	if cfg.Libp2pMetrics {
		// go-libp2p's collectors are process-wide variables: several
		// nodes in one process report the sum.
		opts = append(opts, libp2p.PrometheusRegisterer(reg))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	// UPnP/NAT-PMP port mapping (libp2p.NATPortMap) is deliberately not
	// enabled: it talks to the LAN gateway, which a node must not do
	// unasked.
	// Announce and NoAnnounce (docs/nat.md).
	opts = append(opts, libp2p.AddrsFactory(factory))
	if cfg.AutoNAT {
		// v2 checks each of our addresses; v1 gives the overall verdict
		// (public/private) that AutoRelay, the relay service and the
		// DHT's auto mode follow. We answer both kinds of probes, within
		// libp2p's rate limits (v1: 30 dial-backs a minute, 3 per peer).
		opts = append(opts, libp2p.EnableAutoNATv2(), libp2p.EnableNATService())
	}
	switch forced {
	case network.ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case network.ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	}
	if cfg.RelayClient {
		opts = append(opts, libp2p.EnableRelay(),
			libp2p.EnableAutoRelayWithPeerSource(relays.peers, autoRelayOptions()...))
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if cfg.RelayService {
		opts = append(opts, libp2p.EnableRelayService(relayServiceOptions(cfg.RelayLimits)...))
	}
	if cfg.HolePunching {
		// The tracer replaces the one go-libp2p would set for metrics,
		// so it carries the metrics too.
		trace := holepunch.WithTracer(punchLog{o.Logger})
		if cfg.Libp2pMetrics {
			trace = holepunch.WithMetricsAndEventTracer(
				holepunch.NewMetricsTracer(holepunch.WithRegisterer(reg)), punchLog{o.Logger})
		}
		hpo := []holepunch.Option{trace}
		if o.Punch != nil {
			hpo = append(hpo, o.Punch.option(o.Logger))
		}
		opts = append(opts, libp2p.EnableHolePunching(hpo...))
	}
	if gater != nil {
		opts = append(opts, libp2p.ConnectionGater(gater))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		// libp2p closes them only on some failure paths; both Close
		// methods tolerate a second call.
		return nil, errors.Join(fmt.Errorf("libp2p: %w", err), rm.Close(), cm.Close())
	}
	relays.host.Store(&h)
	return h, nil
}

// autoRelayOptions tunes AutoRelay for federations, where relays are few
// and known: one candidate is enough to start (libp2p waits for four, or
// three minutes), a relay that refused or went away is asked again after
// a minute rather than an hour, and connected peers are asked for new
// candidates at most every 10 s.
func autoRelayOptions() []autorelay.Option {
	return []autorelay.Option{
		autorelay.WithMinCandidates(1),
		autorelay.WithBootDelay(0),
		autorelay.WithBackoff(time.Minute),
		autorelay.WithMinInterval(10 * time.Second),
		// Two reservations: one relay may die without the node going
		// unreachable (libp2p's default, made explicit).
		autorelay.WithNumRelays(2),
	}
}

// relayServiceOptions turns RelayLimits into the relay's resources,
// libp2p's defaults where a field is zero.
func relayServiceOptions(l config.RelayLimits) []relayv2.Option {
	res := relayv2.DefaultResources()
	setIf := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	setIf(&res.MaxReservations, l.MaxReservations)
	setIf(&res.MaxReservationsPerIP, l.MaxReservationsPerIP)
	setIf(&res.MaxCircuits, l.MaxCircuits)
	if l.ReservationTTL > 0 {
		res.ReservationTTL = time.Duration(l.ReservationTTL)
	}
	if l.ConnDuration > 0 {
		res.Limit.Duration = time.Duration(l.ConnDuration)
	}
	if l.ConnDataBytes > 0 {
		res.Limit.Data = l.ConnDataBytes
	}
	return []relayv2.Option{relayv2.WithResources(res)}
}

// newResourceManager scales libp2p's default limits (with its default
// service limits) to the machine and caps the system scope with cfg.
func newResourceManager(cfg config.ResourcesConfig, withMetrics bool) (network.ResourceManager, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	// Every interaction, subscription and observation between two nodes is
	// one stream of /lmos/interact/1.0.0; the default protocol-per-peer
	// limit (64 inbound) would cap a busy consumer node at 64 concurrent
	// calls to this node. The peer scope still bounds the total.
	interactLimit := rcmgr.BaseLimit{Streams: 1024, StreamsInbound: 512, StreamsOutbound: 512, Memory: 64 << 20}
	limits.AddProtocolLimit(lmosproto.ProtocolInteract, interactLimit, rcmgr.BaseLimitIncrease{Streams: 1024, StreamsInbound: 512, StreamsOutbound: 512, Memory: 64 << 20})
	limits.AddProtocolPeerLimit(lmosproto.ProtocolInteract, interactLimit, rcmgr.BaseLimitIncrease{})
	// The same for /lmos/interact/1.1.0, whose streams also wait idle
	// between interactions (interact.DefaultMaxIdleStreams per peer).
	limits.AddProtocolLimit(lmosproto.ProtocolInteractSession, interactLimit, rcmgr.BaseLimitIncrease{Streams: 1024, StreamsInbound: 512, StreamsOutbound: 512, Memory: 64 << 20})
	limits.AddProtocolPeerLimit(lmosproto.ProtocolInteractSession, interactLimit, rcmgr.BaseLimitIncrease{})
	scaled := limits.AutoScale()
	system := rcmgr.ResourceLimits{
		Memory:  rcmgr.LimitVal64(int64(cfg.MaxMemoryMB) << 20),
		FD:      rcmgr.LimitVal(cfg.MaxFDs),
		Conns:   rcmgr.LimitVal(cfg.MaxConns),
		Streams: rcmgr.LimitVal(cfg.MaxStreams),
	}
	// Zero is rcmgr's DefaultLimit: the scaled value stays.
	concrete := rcmgr.PartialLimitConfig{System: system}.Build(scaled)
	if !withMetrics {
		return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(concrete), rcmgr.WithMetricsDisabled())
	}
	// The stats reporter traces every scope change (it cost about 5 % of
	// the CPU of a request-reply across nodes when last measured); its
	// collectors register with the node's registry in NewHost.
	str, err := rcmgr.NewStatsTraceReporter()
	if err != nil {
		return nil, err
	}
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(concrete), rcmgr.WithTraceReporter(str))
}

// listenAddrs parses cfg.Listen (already validated).
func listenAddrs(cfg config.Config) ([]ma.Multiaddr, error) {
	addrs := make([]ma.Multiaddr, 0, len(cfg.Listen))
	for i, s := range cfg.Listen {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("listen[%d]: %q: %w", i, s, err)
		}
		addrs = append(addrs, m)
	}
	return addrs, nil
}

// Listen makes h listen on every address of cfg.Listen and fails,
// naming the address, if any one cannot be bound.
func Listen(h host.Host, cfg config.Config) error {
	addrs, err := listenAddrs(cfg)
	if err != nil {
		return err
	}
	for i, a := range addrs {
		if err := checkPortFree(a); err != nil {
			return fmt.Errorf("listen[%d]: %s: %w", i, a, err)
		}
		if err := h.Network().Listen(a); err != nil {
			return fmt.Errorf("listen[%d]: %s: %w", i, a, err)
		}
	}
	return nil
}

// BootstrapPeers parses cfg.Bootstrap (already validated), merging the
// addresses of entries that name the same peer.
func BootstrapPeers(cfg config.Config) ([]peer.AddrInfo, error) {
	addrs := make([]ma.Multiaddr, 0, len(cfg.Bootstrap))
	for i, s := range cfg.Bootstrap {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("bootstrap[%d]: %q: %w", i, s, err)
		}
		addrs = append(addrs, m)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(addrs...)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return infos, nil
}

// NewDHT builds the node's kad-dht on h: the private LMOS DHT of
// dht.Options, in cfg.DHTMode, keeping what it stores for others in store,
// falling back to cfg.Bootstrap when its routing table runs empty.
func NewDHT(ctx context.Context, cfg config.Config, h host.Host, store ds.Batching, things lmosdht.ThingValidator, ops *groups.OpCache) (*kaddht.IpfsDHT, error) {
	mode, err := lmosdht.ParseMode(cfg.DHTMode)
	if err != nil {
		return nil, fmt.Errorf("dhtMode: %w", err)
	}
	peers, err := BootstrapPeers(cfg)
	if err != nil {
		return nil, err
	}
	opts, err := lmosdht.Options(lmosdht.Params{
		Mode:           mode,
		Datastore:      store,
		BootstrapPeers: peers,
		Things:         things,
		// The Thing records one publisher may make this node store for
		// the DHT: as many as its directory holds of it.
		MaxRecordsPerPublisher: cfg.Quota.WithDefaults().MaxThings,
		// Group logs (docs/groups.md), /lmos-group/<group ID>.
		Validators: map[string]record.Validator{lmosproto.NamespaceGroup: groups.Validator{Ops: ops}},
	})
	if err != nil {
		return nil, fmt.Errorf("dht: %w", err)
	}
	d, err := kaddht.New(ctx, h, opts...)
	if err != nil {
		return nil, fmt.Errorf("dht: %w", err)
	}
	return d, nil
}

// Gossipsub settings of the announce topic.
const (
	// MaxMessageSize admits the largest record (proto.MaxRecordSize)
	// with room for the pubsub envelope (author, sequence number, topic,
	// signature, public key) and the RPC around it. Gossipsub's default
	// (1 MiB) is below the largest record.
	MaxMessageSize = lmosproto.MaxRecordSize + 64<<10
)

// peerOutboundQueue is the RPCs gossipsub queues per peer.
const peerOutboundQueue = 128

// validateQueue is the messages gossipsub queues for validation. Its
// default (32), drained by one worker per CPU, overflows when a node
// hears a burst of announcements (each from several mesh peers at once:
// a message is not "seen" until validated), and an overflowing message is
// dropped without being marked seen, so a burst lost what no later copy
// brought. 256 queued messages are at most 256 records in memory.
const validateQueue = 256

// MessageID is the gossipsub message ID of an LMOS message: the SHA-256
// digest of its data, as raw bytes. It does not depend on the author's
// sequence number, so every implementation derives the same ID, and a
// record announced twice is one message.
//
// On a group topic (proto.TopicGroupPrefix) the digest covers the topic
// name, a zero byte, then the data: a Thing scoped to two groups is the
// same {"thing": record} on both topics, and gossipsub's seen cache, which
// is keyed by message ID across topics, would otherwise drop the second
// publication, so members of the second group only would never get it.
// The same holds for an announce shard (proto.TopicShardPrefix): a Thing
// with capabilities in two shards is the same record on both, and on
// proto.TopicAnnounce too.
func MessageID(m *pubsubpb.Message) string {
	h := sha256.New()
	if t := m.GetTopic(); strings.HasPrefix(t, lmosproto.TopicGroupPrefix) || strings.HasPrefix(t, lmosproto.TopicShardPrefix) {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	h.Write(m.GetData())
	return string(h.Sum(nil))
}

// NewPubSub builds the node's gossipsub router on h. It runs until ctx is
// cancelled (go-libp2p-pubsub has no Close); the node cancels it after the
// federation has left its topics. The group service filters the peers of
// group topics.
func NewPubSub(ctx context.Context, h host.Host, o PubSubOptions) (*pubsub.PubSub, error) {
	groups := o.Groups
	params, thresholds := peerScore()
	gs := pubsub.DefaultGossipSubParams()
	if o.Heartbeat > 0 {
		gs.HeartbeatInterval = o.Heartbeat
		gs.HeartbeatInitialDelay = min(gs.HeartbeatInitialDelay, o.Heartbeat)
	}
	opts := []pubsub.Option{
		pubsub.WithGossipSubParams(gs),
		// DESIGN.md: content-derived IDs; go and js libp2p default IDs
		// differ and break IHAVE/IWANT recovery between them.
		pubsub.WithMessageIdFn(MessageID),
		// StrictSign: every message is signed by its author and the
		// signature verified, so the announce validator can trust
		// Message.GetFrom() as the author.
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerScore(params, thresholds),
		// A node sends its own announcements to every topic peer whose
		// score is above PublishThreshold, not only to its mesh peers:
		// announcements are rare, and a peer that just connected (not yet
		// grafted into the mesh, which takes a heartbeat) must not miss
		// one. go-libp2p-pubsub v0.16 has flood publishing off by default.
		pubsub.WithFloodPublish(true),
		pubsub.WithMaxMessageSize(MaxMessageSize),
		// A directory node joins the 16 announce shards at once: one
		// subscription announcement per topic and peer, queued while the
		// stream to a new peer opens. Gossipsub's default queue (32)
		// overflows then, and each overflow waits up to a second to retry.
		pubsub.WithPeerOutboundQueueSize(peerOutboundQueue),
		pubsub.WithValidateQueueSize(validateQueue),
		// docs/groups.md: on a group topic, only current members are
		// meshed with, gossiped to and (their subscriptions kept) sent
		// to, by the group service's view of each group.
		pubsub.WithPeerFilter(groups.PeerFilter),
		pubsub.WithSubscriptionFilter(groups.SubscriptionFilter()),
	}
	for _, t := range o.Tracers {
		opts = append(opts, pubsub.WithRawTracer(t))
	}
	if o.Discovery != nil {
		opts = append(opts, pubsub.WithDiscovery(o.Discovery))
	}
	ps, err := pubsub.NewGossipSub(ctx, h, opts...)
	if err != nil {
		return nil, fmt.Errorf("pubsub: %w", err)
	}
	return ps, nil
}

// peerScore returns gossipsub's peer score parameters and thresholds.
//
// The score exists to stop peers that send invalid messages: every message
// the announce validator rejects counts against the peer that forwarded it
// (P4), squared, decaying over ten minutes. One rejected message costs -10
// (an honest peer can forward one replay in a race: its score dips and
// recovers), two cost -40 (below GossipThreshold: no more gossip to or
// from it), three -90 (below GraylistThreshold: everything it sends is
// dropped). Honest peers earn a little from time in the mesh (P1) and
// first deliveries (P2).
//
// Mesh delivery deficits (P3, P3b) are off: announcements are rare and
// bursty, so a silent mesh peer is normal, and penalising it would prune
// honest peers. IP colocation (P6) counts peers behind one address beyond
// ten, except on loopback, where every peer of a multi-node test lives.
func peerScore() (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	topics := map[string]*pubsub.TopicScoreParams{lmosproto.TopicAnnounce: TopicScore(), lmosproto.TopicPresence: TopicScore()}
	for n := range lmosproto.ShardCount {
		topics[lmosproto.ShardTopic(n)] = TopicScore()
	}
	params := &pubsub.PeerScoreParams{
		Topics:        topics,
		TopicScoreCap: 50,

		AppSpecificScore:  func(peer.ID) float64 { return 0 },
		AppSpecificWeight: 0,

		IPColocationFactorWeight:    -10,
		IPColocationFactorThreshold: 10,
		IPColocationFactorWhitelist: []*net.IPNet{
			{IP: net.IPv4(127, 0, 0, 0), Mask: net.CIDRMask(8, 32)},
			{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
		},

		BehaviourPenaltyWeight:    -10,
		BehaviourPenaltyThreshold: 6,
		BehaviourPenaltyDecay:     pubsub.ScoreParameterDecay(10 * time.Minute),

		DecayInterval: pubsub.DefaultDecayInterval,
		DecayToZero:   pubsub.DefaultDecayToZero,
		RetainScore:   10 * time.Minute,
	}
	thresholds := &pubsub.PeerScoreThresholds{
		GossipThreshold:             -20,
		PublishThreshold:            -50,
		GraylistThreshold:           -80,
		AcceptPXThreshold:           10,
		OpportunisticGraftThreshold: 2,
	}
	return params, thresholds
}

// TopicScore is the score of one topic: the announce topic and every
// Thing's events topic (package fanout) share it, so a message any of
// their validators rejects costs its sender (P4).
func TopicScore() *pubsub.TopicScoreParams {
	return &pubsub.TopicScoreParams{
		TopicWeight: 1,

		TimeInMeshWeight:  0.01,
		TimeInMeshQuantum: time.Second,
		TimeInMeshCap:     600, // +6 after ten minutes in the mesh

		FirstMessageDeliveriesWeight: 1,
		FirstMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(time.Hour),
		FirstMessageDeliveriesCap:    20,

		InvalidMessageDeliveriesWeight: -10,
		InvalidMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(10 * time.Minute),
	}
}

// HostOptions are what NewHost takes besides the Config: what a
// serialisable Config cannot hold.
type HostOptions struct {
	// Registerer takes go-libp2p's metrics with Config.Libp2pMetrics.
	Registerer prometheus.Registerer
	// Gater, if set, decides which connections the host makes and takes.
	Gater coreconnmgr.ConnectionGater
	// Reachability, unless unknown, is forced on AutoNAT (tests on
	// loopback, where AutoNAT never finds a public address).
	Reachability network.Reachability
	// Logger takes the host's own records (hole punching). Required.
	Logger *slog.Logger
	// Punch, if set, takes the hole punching service (Punch.Run).
	Punch *Punch
}

// GroupFilter keeps group topics to their members: the peers gossipsub
// meshes with, gossips to and sends to on a group topic, and the
// subscriptions it keeps. *groupsvc.Service implements it.
type GroupFilter interface {
	PeerFilter(pid peer.ID, topic string) bool
	SubscriptionFilter() pubsub.SubscriptionFilter
}

// PubSubOptions are what NewPubSub takes.
type PubSubOptions struct {
	// Heartbeat overrides gossipsub's heartbeat interval when positive.
	Heartbeat time.Duration
	// Tracers observe the router.
	Tracers []pubsub.RawTracer
	// Groups filters the peers and subscriptions of group topics.
	// Required.
	Groups GroupFilter
	// Discovery, if set, finds the other peers of the topics the node
	// joins (ShardDiscovery: of the announce shards).
	Discovery discovery.Discovery
}
