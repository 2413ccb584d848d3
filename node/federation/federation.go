package federation

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/peerlimit"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// DHT is what a Federation needs of a DHT; *kaddht.IpfsDHT has it.
type DHT interface {
	PutValue(ctx context.Context, key string, value []byte, opts ...routing.Option) error
	GetValue(ctx context.Context, key string, opts ...routing.Option) ([]byte, error)
	FindPeer(ctx context.Context, id peer.ID) (peer.AddrInfo, error)
	Provide(ctx context.Context, key cid.Cid, broadcast bool) error
	FindProvidersAsync(ctx context.Context, key cid.Cid, count int) <-chan peer.AddrInfo
}

// ScopedPublisher spreads group-scoped records on group topics (Deps.Scoped).
// *groupsvc.Service implements it.
type ScopedPublisher interface {
	PublishThing(ctx context.Context, groups []string, record []byte) (int, error)
}

// Deps are the parts a Federation works with. Host, Key and Directory
// are required; the caller keeps ownership of all of them and closes them
// after the Federation.
type Deps struct {
	// Host is the node's libp2p host; the sync protocol runs on it.
	Host host.Host
	// Key is the node's identity key, the one Host's peer ID is derived
	// from; it signs the node's records.
	Key ed25519.PrivateKey
	// Organization is the organisation DID every published TD claims
	// (lmos:organization); "" claims none. Publish writes it into each
	// TD, and the first republication after start publishes a new version
	// of each own Thing whose claim differs.
	Organization string
	// Directory holds the node's own Things and those it learns.
	Directory *directory.Directory
	// Intake checks and stores the records of other publishers; nil
	// builds one on Directory with the protocol's limits and the
	// Federation's clock. The node shares one with the group service.
	Intake *Intake
	// DHT stores records and provider records; nil runs without (records
	// travel by gossip and sync only, and lookups stay local).
	DHT DHT
	// Asked, if set, is told of each peer the node asked (a provider it
	// synced with in a lookup, a publisher it fetched a record from), so
	// that the host keeps the connection (p2p.KeepAsked). Optional.
	Asked func(peer.ID)
	// PubSub carries announcements on proto.TopicAnnounce; nil runs
	// without gossip. It must use content-derived message IDs and strict
	// signing, as the node configures it.
	PubSub *pubsub.PubSub

	// MemberOf reports whether this node is a member of group. Publish
	// refuses a TD that names a group this node is not a member of (an
	// error wrapping ErrNotMember and a proto.ValidationErrors naming
	// /lmos:groups/i). Nil refuses every group.
	MemberOf func(group string) bool
	// Scoped spreads a group-scoped record to the members of groups: a TD
	// naming lmos:groups (its groups), or the tombstone that removes one
	// (the groups of the TD it replaces). The group service publishes it on
	// each group's topic as {"thing": record}. Publish, Remove and every
	// republication call it, with the federation's publication lock held,
	// instead of the announce topic and the DHT; its errors are logged.
	// Nil: group-scoped records leave this node by sync only.
	Scoped ScopedPublisher
	// Allowed reports whether peer p may see the Thing thingID, which is
	// restricted to groups (docs/groups.md, "Enforcement"). The sync
	// protocol serves a group-scoped own record only to a peer it allows,
	// and the lookups (FindCapability, …) answer with a learned
	// group-scoped Thing only if it allows this node. It may be called
	// under the directory's read lock and must not call the Directory.
	// Nil allows no one (learned group-scoped Things are then never
	// answered; own ones always are).
	Allowed func(groups []string, thingID string, p peer.ID) bool
}

// Config configures a Federation. The zero value of every field selects
// its default.
type Config struct {
	// SyncOnConnect asks every newly connected peer that speaks the sync
	// protocol for its records. The node always answers such requests.
	SyncOnConnect bool
	// RepublishInterval is how often own records are re-signed and
	// published again; 0 means dht.RepublishInterval.
	RepublishInterval time.Duration
	// PresenceInterval is how often the node sends a presence beat on
	// proto.TopicPresence while it publishes Things, and counts its
	// connected peers as seen (presence.go); 0 means
	// DefaultPresenceInterval. Keep it well below the
	// directory.Config.OfflineAfter of the federation's nodes.
	PresenceInterval time.Duration
	// BeatRate is the presence beats a second (of other nodes) the node
	// aims to hear: while it hears more, it sends its own beats less
	// often, as do the others, up to MaxBeatSlowdown PresenceIntervals
	// apart (presence.go, beatPace). 0 means DefaultBeatRate.
	BeatRate float64
	// Role says which announce topics the node carries: RoleV1 (the
	// zero value) only the v1 topics, RoleDirectory every shard and the
	// v1 topics, RoleLight the shards of what it publishes and looks up
	// (shard.go; docs/wire.md, "Announce shards"). A light node does not
	// sync with every peer it connects to, whatever SyncOnConnect says.
	Role Role
	// ShortBudget is the largest signed record announced in full on a
	// shard; a larger one is announced short. 0 means DefaultShortBudget,
	// a negative value announces every TD short.
	ShortBudget int
	// LightPast is the learned bytes (directory.Directory.LearnedBytes)
	// past which a RoleAuto node becomes light; 0 means DefaultLightPast.
	LightPast int64
	// NoLegacyAnnounce ends the transition to the shards: a node with a
	// role other than RoleV1 no longer publishes on (or, as a directory,
	// relays) proto.TopicAnnounce and proto.TopicPresence. Set it once no
	// node of the federation runs without shards.
	NoLegacyAnnounce bool
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	if c.RepublishInterval < 0 {
		return fmt.Errorf("federation: RepublishInterval: %s is negative", c.RepublishInterval)
	}
	if c.PresenceInterval < 0 {
		return fmt.Errorf("federation: PresenceInterval: %s is negative", c.PresenceInterval)
	}
	if c.LightPast < 0 {
		return fmt.Errorf("federation: LightPast: %d is negative", c.LightPast)
	}
	if c.BeatRate < 0 {
		return fmt.Errorf("federation: BeatRate: %g is negative", c.BeatRate)
	}
	if _, err := ParseRole(string(c.Role)); err != nil {
		return err
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.RepublishInterval == 0 {
		c.RepublishInterval = lmosdht.RepublishInterval
	}
	if c.PresenceInterval == 0 {
		c.PresenceInterval = DefaultPresenceInterval
	}
	if c.BeatRate == 0 {
		c.BeatRate = DefaultBeatRate
	}
	if c.LightPast == 0 {
		c.LightPast = DefaultLightPast
	}
	switch {
	case c.ShortBudget == 0:
		c.ShortBudget = DefaultShortBudget
	case c.ShortBudget < 0:
		c.ShortBudget = 0
	}
	return c
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sends the federation's logs to log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithClock replaces time.Now as the clock that dates signatures (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// Federation publishes the node's Things and learns those of its peers; see
// the package documentation. Build it with New, start it with Start, stop
// it with Close. It is safe for concurrent use.
type Federation struct {
	p      Deps
	cfg    Config
	now    func() time.Time
	self   peer.ID
	log    *slog.Logger
	dir    *directory.Directory
	intake *Intake

	topic      *pubsub.Topic // proto.TopicAnnounce; nil without gossip or after the transition
	validating bool          // the topic validator is registered
	presence   *pubsub.Topic // proto.TopicPresence; nil without gossip
	prValid    bool          // its validator is registered
	// lit is set once a RoleAuto node became light (autoLight).
	lit atomic.Bool
	// beatsHeard counts the beats of others accepted since the node's
	// last beat (heardBeat), for the pace of its own.
	beatsHeard atomic.Int64

	// ctx is cancelled by Close; it scopes the federation's goroutines and
	// the network calls they make.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// pubMu serialises Publish, Remove and republication: the seq of a new
	// version is read and written under it, and announcements leave in seq
	// order.
	pubMu sync.Mutex
	// reclaimMu makes one reclaim at a time: the one at start and one
	// asked meanwhile would each publish a new version for one change.
	reclaimMu sync.Mutex
	// unheard is set when a record was announced while the topic had no
	// peers gossipsub sends to; the topic watcher republishes when one
	// joins and gossipsub can send to it. Guarded by pubMu.
	unheard bool
	// sent is the own announcements of the last catchUpWindow, for the
	// peers that come onto their topics late (catchUp). Guarded by pubMu.
	sent sentLog
	// runBegun: the directory's run marker is set (beginRun); unclean:
	// the previous run ended without clearing it. settled: the own
	// Things published in this run, and whether every seq announced for
	// each is durable (lastSeq, publishAhead). Guarded by pubMu.
	runBegun bool
	unclean  bool
	settled  map[string]bool

	dhtq  *dhtQueue
	learn *learnQueue

	shards     shardSet           // the shard topics joined
	shorts     shortTable         // short announcements not fetched yet
	fetchq     chan thingRef      // fetches a directory node queued
	fetchLimit *peerlimit.Limiter // fetch requests this node answers, per peer

	serveLimit *peerlimit.Limiter // requests this node answers, per peer
	syncLimit  *peerlimit.Limiter // on-connect syncs this node starts, per peer
	syncSem    chan struct{}

	repairs     repairs     // beats whose digest differed from what is held
	memberSyncs peerTimes   // SyncMember's last sync per peer
	recent      *recentKeys // when lookups last asked the network, per key
	joined      groupSet    // the groups this node was a member of (GroupChanged)

	mu      sync.Mutex
	started bool
	closed  bool
	relay   pubsub.RelayCancelFunc
	prRelay pubsub.RelayCancelFunc
	idSub   event.Subscription
	connSub event.Subscription
	topicEH *pubsub.TopicEventHandler

	closeOnce sync.Once
	closeErr  error
}

// New checks deps and cfg and builds a Federation: it joins the announce
// topic and registers its validator, so that no announcement is accepted
// unchecked. It starts nothing; Start does.
func New(deps Deps, cfg Config, opts ...Option) (_ *Federation, err error) {
	p := deps
	switch {
	case p.Host == nil:
		return nil, errors.New("federation: Deps.Host is nil")
	case len(p.Key) != ed25519.PrivateKeySize:
		return nil, fmt.Errorf("federation: Deps.Key: %d bytes, want an Ed25519 private key (%d)", len(p.Key), ed25519.PrivateKeySize)
	case p.Directory == nil:
		return nil, errors.New("federation: Deps.Directory is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	self, err := lmosproto.PeerIDFromEd25519(p.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("federation: Deps.Key: %w", err)
	}
	if self != p.Host.ID() {
		return nil, fmt.Errorf("federation: Deps.Key is the key of %s, the host is %s", self, p.Host.ID())
	}
	if p.Intake == nil {
		if p.Intake, err = NewIntake(IntakeDeps{Directory: p.Directory, Self: self, Validator: lmosdht.ThingValidator{Now: o.now}}, WithLogger(o.log)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Federation{
		p:          p,
		cfg:        cfg,
		now:        o.now,
		self:       self,
		log:        o.log,
		dir:        p.Directory,
		intake:     p.Intake,
		ctx:        ctx,
		cancel:     cancel,
		serveLimit: peerlimit.New(SyncEvery, SyncBurst),
		recent:     newRecentKeys(maxRecentKeys),
		syncLimit:  peerlimit.New(SyncEvery, 1),
		syncSem:    make(chan struct{}, maxConcurrentSyncs),
		settled:    make(map[string]bool),
		fetchq:     make(chan thingRef, maxFetchQueue),
		fetchLimit: peerlimit.New(FetchEvery, FetchBurst),
	}
	f.shards.things = make(map[string][]int)
	f.shards.looked = make(map[string]time.Time)
	f.shards.own = make(map[string]bool)
	f.repairs = repairs{odd: make(map[peer.ID]time.Time), done: make(map[peer.ID]repairWait), queue: make(chan peer.ID, maxRepairs)}
	f.dhtq = newDHTQueue(f)
	f.learn = newLearnQueue(p.Intake, p.Directory, o.log)
	p.Directory.OnEvict(f.evicted)
	defer func() {
		if err != nil {
			cancel()
			err = errors.Join(err, f.leaveTopic())
		}
	}()
	if p.PubSub != nil && (cfg.Role == RoleV1 || !cfg.NoLegacyAnnounce) {
		if err := p.PubSub.RegisterTopicValidator(lmosproto.TopicAnnounce, f.validator("announcement", f.checkAnnounce)); err != nil {
			return nil, fmt.Errorf("federation: topic %s: validator: %w", lmosproto.TopicAnnounce, err)
		}
		f.validating = true
		if f.topic, err = p.PubSub.Join(lmosproto.TopicAnnounce); err != nil {
			return nil, fmt.Errorf("federation: topic %s: %w", lmosproto.TopicAnnounce, err)
		}
		if err := p.PubSub.RegisterTopicValidator(lmosproto.TopicPresence, f.validator("presence beat", f.checkPresence)); err != nil {
			return nil, fmt.Errorf("federation: topic %s: validator: %w", lmosproto.TopicPresence, err)
		}
		f.prValid = true
		if f.presence, err = p.PubSub.Join(lmosproto.TopicPresence); err != nil {
			return nil, fmt.Errorf("federation: topic %s: %w", lmosproto.TopicPresence, err)
		}
	}
	return f, nil
}

// Start serves the sync and find protocols, relays the announce topic, and starts the
// background work: the DHT worker, the republish loop (which first
// republishes what the directory holds as own) and, with SyncOnConnect, the
// syncs with newly identified peers. ctx bounds the start itself.
func (f *Federation) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return errors.New("federation: start: closed")
	case f.started:
		return errors.New("federation: start: already started")
	}
	f.started = true
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("federation: start: %w", err)
	}
	f.p.Host.SetStreamHandler(lmosproto.ProtocolSync, f.handleSync)
	f.p.Host.SetStreamHandler(lmosproto.ProtocolFind, f.handleFind)
	f.p.Host.SetStreamHandler(lmosproto.ProtocolFetch, f.handleFetch)
	if f.p.PubSub != nil {
		f.wg.Go(func() { f.learn.run(f.ctx.Done()) })
	}
	if err := f.startShards(); err != nil {
		return fmt.Errorf("federation: start: %w", err)
	}
	if f.role() == RoleDirectory {
		for range fetchWorkers {
			f.wg.Go(f.fetchLoop)
		}
	}
	// A light node publishes on the v1 topics (while the transition
	// lasts) but does not relay them: it would hear every announcement.
	if f.topic != nil && f.role() != RoleLight {
		relay, err := f.topic.Relay()
		if err != nil {
			return fmt.Errorf("federation: start: topic %s: %w", lmosproto.TopicAnnounce, err)
		}
		f.relay = relay
		prRelay, err := f.presence.Relay()
		if err != nil {
			return fmt.Errorf("federation: start: topic %s: %w", lmosproto.TopicPresence, err)
		}
		f.prRelay = prRelay
	}
	if f.topic != nil {
		eh, err := f.topic.EventHandler()
		if err != nil {
			return fmt.Errorf("federation: start: topic %s: %w", lmosproto.TopicAnnounce, err)
		}
		f.topicEH = eh
		f.wg.Go(func() { f.watchTopic(eh) })
	}
	f.wg.Go(f.livenessLoop)
	if f.p.PubSub != nil {
		f.wg.Go(func() { f.every(catchUpPoll, f.catchUp) })
	}
	if f.p.PubSub != nil && f.holdsAll() {
		f.wg.Go(f.repairLoop)
	}
	connSub, err := f.p.Host.EventBus().Subscribe(new(event.EvtPeerConnectednessChanged))
	if err != nil {
		return fmt.Errorf("federation: start: connection events: %w", err)
	}
	f.connSub = connSub
	f.wg.Go(func() { f.watchConnections(connSub) })
	if f.cfg.SyncOnConnect && f.role() != RoleLight {
		sub, err := f.p.Host.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
		if err != nil {
			return fmt.Errorf("federation: start: identify events: %w", err)
		}
		f.idSub = sub
		f.wg.Go(func() { f.watchIdentify(sub) })
		// Peers identified before Start raised their event already.
		for _, pid := range f.p.Host.Network().Peers() {
			f.maybeSync(pid)
		}
	}
	if f.p.DHT != nil {
		f.wg.Go(f.dhtq.run)
	}
	f.wg.Go(f.republishLoop)
	return nil
}

// Close stops the federation's goroutines, waits for them, stops serving
// sync, and leaves the announce topic. It is idempotent.
func (f *Federation) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		relay, prRelay, idSub, connSub, eh := f.relay, f.prRelay, f.idSub, f.connSub, f.topicEH
		f.mu.Unlock()

		f.cancel()
		f.p.Host.RemoveStreamHandler(lmosproto.ProtocolSync)
		f.p.Host.RemoveStreamHandler(lmosproto.ProtocolFind)
		f.p.Host.RemoveStreamHandler(lmosproto.ProtocolFetch)
		var errs []error
		if idSub != nil {
			errs = append(errs, idSub.Close())
		}
		if connSub != nil {
			errs = append(errs, connSub.Close())
		}
		if eh != nil {
			eh.Cancel()
		}
		f.wg.Wait()
		if relay != nil {
			relay()
		}
		if prRelay != nil {
			prRelay()
		}
		errs = append(errs, f.leaveTopic(), f.closeShards())
		// No publication is in flight once pubMu is held, and none
		// starts after: f.ctx is cancelled. The run ends clean only if
		// every seq it announced is durable: after a failed fsync the
		// marker stays, and the next run skips a seq (lastSeq).
		f.pubMu.Lock()
		if f.runBegun {
			if f.allSettled() {
				errs = append(errs, f.dir.EndRun())
			} else {
				f.log.Warn("closing with an own Thing whose announced version may not be durable; the next run skips one seq of each")
			}
		}
		f.pubMu.Unlock()
		if err := errors.Join(errs...); err != nil {
			f.closeErr = fmt.Errorf("federation: close: %w", err)
		}
	})
	return f.closeErr
}

// leaveTopic closes the announce topic and unregisters its validator.
func (f *Federation) leaveTopic() error {
	if f.p.PubSub == nil {
		return nil
	}
	var errs []error
	if f.topic != nil {
		if err := f.topic.Close(); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", lmosproto.TopicAnnounce, err))
		}
	}
	if f.validating {
		if err := f.p.PubSub.UnregisterTopicValidator(lmosproto.TopicAnnounce); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: validator: %w", lmosproto.TopicAnnounce, err))
		}
	}
	if f.presence != nil {
		if err := f.presence.Close(); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", lmosproto.TopicPresence, err))
		}
	}
	if f.prValid {
		if err := f.p.PubSub.UnregisterTopicValidator(lmosproto.TopicPresence); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: validator: %w", lmosproto.TopicPresence, err))
		}
	}
	return errors.Join(errs...)
}

// Directory returns the directory the federation keeps in step.
func (f *Federation) Directory() *directory.Directory { return f.dir }

// Intake returns the component through which the records of other
// publishers enter the directory.
func (f *Federation) Intake() *Intake { return f.intake }

// Refused returns how many sync requests of other peers this node refused
// for being over their rate (SyncBurst, then one every SyncEvery).
func (f *Federation) Refused() int64 { return f.serveLimit.Refused() }
