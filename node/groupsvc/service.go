package groupsvc

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	ds "github.com/ipfs/go-datastore"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/peerlimit"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Errors of the Service's methods, wrapped with the details; the HTTP API
// maps them to statuses (see docs/groups.md).
var (
	// ErrUnknownGroup: the node knows no group with this ID (404).
	ErrUnknownGroup = errors.New("unknown group")
	// ErrNotAdmin: this node is not an admin of the group (403).
	ErrNotAdmin = errors.New("this node is not an admin of the group")
	// ErrNotMember: this node (or the peer named) is not a member (403;
	// 404 for a peer named in the path).
	ErrNotMember = errors.New("not a member of the group")
	// ErrNotAllowed: the policy does not let this node post (403).
	ErrNotAllowed = errors.New("not allowed by the group's policy")
	// ErrRefused: an admin's node refused a join (403).
	ErrRefused = errors.New("join refused")
	// ErrDissolved: the group is dissolved (409).
	ErrDissolved = errors.New("the group is dissolved")
	// ErrLastAdmin: the operation would leave the group without an admin
	// (409); dissolve it instead.
	ErrLastAdmin = errors.New("the group would be left without an admin")
	// ErrBadRequest: an argument is malformed (400).
	ErrBadRequest = errors.New("bad request")
	// ErrNoGossip: the node runs without gossipsub, so it cannot post or
	// receive posts (503).
	ErrNoGossip = errors.New("the node runs without gossip")
	// ErrClosed: the Service is closed.
	ErrClosed = errors.New("groupsvc: closed")
)

// DHT is what the Service needs of a DHT; *kaddht.IpfsDHT has it.
type DHT interface {
	PutValue(ctx context.Context, key string, value []byte, opts ...routing.Option) error
	GetValue(ctx context.Context, key string, opts ...routing.Option) ([]byte, error)
	FindPeer(ctx context.Context, id peer.ID) (peer.AddrInfo, error)
}

// Things takes the group-scoped Thing records that members publish on
// group topics: it checks and stores the record the member from published
// on the topic of group, and says what the topic's validator does with the
// message (accept, ignore a duplicate, reject a record that does not
// check, is not the author's, or does not name the group).
// *federation.Intake implements it.
type Things interface {
	ValidateScoped(ctx context.Context, from peer.ID, group string, record []byte) (pubsub.ValidationResult, error)
}

// scopedTimeout bounds the storing of one group-scoped record that arrived
// on a group topic.
const scopedTimeout = 10 * time.Second

// Deps are the parts a Service works with. Host, Key and Datastore are
// required; the caller keeps ownership of all of them and closes them
// after the Service. The gossipsub router comes at Start: it is built
// after the Service, whose peer and subscription filters it uses
// (PeerFilter, SubscriptionFilter).
type Deps struct {
	// Host is the node's libp2p host; the join and sync protocols run on
	// it.
	Host host.Host
	// Key is the node's identity key, the one Host's peer ID is derived
	// from; it signs the node's operations and invitations.
	Key ed25519.PrivateKey
	// TopicScore, if set, is the peer-score parameters of every group
	// topic, so that messages the validator rejects count against their
	// sender.
	TopicScore *pubsub.TopicScoreParams
	// DHT stores the group logs; nil runs without.
	DHT DHT
	// Datastore persists the logs and the pending joins, below
	// DatastorePrefix.
	Datastore ds.Batching
	// Ops, if set, is the node's cache of verified operations
	// (groups.OpCache), shared with the DHT's validator of group logs: an
	// operation that arrives on the topic and again in logs is verified
	// once. Nil verifies every time.
	Ops *groups.OpCache
	// OnChange, if set, is called (from one goroutine, never concurrently,
	// and only after Start) with a group's ID after operations were added
	// to its log (its membership, roles, scopes, policy or dissolution may
	// have changed); a burst of operations is one call.
	OnChange func(group string)
	// OnMemberSync, if set, is called after a member p asked this node
	// for its log of group: p holds this node as a member, so what p
	// restricts to the group is open to this node now (the node asks p
	// for its Things). It must not block.
	OnMemberSync func(group string, p peer.ID)
	// Things, if set, takes the group-scoped Things published on group
	// topics; without it such messages are ignored.
	Things Things
}

// Config configures a Service. The zero value of every field selects its
// default.
type Config struct {
	// AntiEntropyEvery: see the constant AntiEntropyEvery.
	AntiEntropyEvery time.Duration `json:"antiEntropyEvery,omitempty"`
	// RepublishInterval: see the constant RepublishInterval.
	RepublishInterval time.Duration `json:"republishInterval,omitempty"`
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.AntiEntropyEvery < 0 {
		errs = append(errs, fmt.Errorf("groupsvc: antiEntropyEvery: %s is negative", c.AntiEntropyEvery))
	}
	if c.RepublishInterval < 0 {
		errs = append(errs, fmt.Errorf("groupsvc: republishInterval: %s is negative", c.RepublishInterval))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.AntiEntropyEvery == 0 {
		c.AntiEntropyEvery = AntiEntropyEvery
	}
	if c.RepublishInterval == 0 {
		c.RepublishInterval = RepublishInterval
	}
	return c
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sends the Service's logs to log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// Settings of the background work.
const (
	// JoinTimeout bounds one join exchange with one admin's node,
	// including the dial.
	JoinTimeout = 10 * time.Second
	// JoinWait bounds Join's own attempt with every admin it finds; when
	// none answered by then, the join is pending.
	JoinWait = 20 * time.Second
	// SyncTimeout bounds one sync exchange.
	SyncTimeout = 15 * time.Second
	// DHTTimeout bounds one DHT put or get of a log.
	DHTTimeout = 30 * time.Second
	// SyncEvery is the least time between two syncs this node starts with
	// one peer for one group when it connects.
	SyncEvery = 10 * time.Second
	// ResubscribeEvery is the least time between two announcements of a
	// group topic subscription that members asked for, and between two
	// syncs with one member that subscribes to a group topic.
	ResubscribeEvery = 2 * time.Second
	// AntiEntropyEvery is how often the node syncs each of its groups with
	// one connected member, picked at random: a bound on how long an
	// operation that gossip lost stays missing.
	AntiEntropyEvery = 30 * time.Second
	// RedialMin and RedialMax bound the backoff between the dials that
	// reconnect a former member after its connections were closed
	// (evict); the swarm's own dial backoff (5 s and more after a failed
	// dial) comes on top.
	RedialMin = time.Second
	RedialMax = 30 * time.Second
	// PendingRetryMin and PendingRetryMax bound the backoff of a pending
	// join's retries.
	PendingRetryMin = time.Second
	PendingRetryMax = 15 * time.Second
	// RepublishInterval is how often the logs of the node's groups are
	// put in the DHT again.
	RepublishInterval = 12 * time.Hour

	// putDebounce gathers the operations of a burst into one DHT put.
	putDebounce = 200 * time.Millisecond
	// maxFrame bounds a join or sync request frame.
	maxFrame = 16 << 10
	// maxLogFrame bounds an answer frame: a log and its envelope.
	maxLogFrame = groups.MaxLogSize + 64<<10
	// maxDropped bounds the remembered dropped subscriptions.
	maxDropped = 16384
	// tellTries bounds the syncs with a former member that does not show
	// yet that it knows it is one.
	tellTries = 5
	// postBuffer is the queue of one local post subscriber.
	postBuffer = 64
)

// Service runs the node's groups; see the package documentation. Build it
// with New, start it with Start, stop it with Close.
type Service struct {
	p    Deps
	cfg  Config
	now  func() time.Time
	self peer.ID
	log  *slog.Logger
	// ps carries the group topics from Start on; nil before, and without
	// gossip.
	ps atomic.Pointer[pubsub.PubSub]

	// ctx is cancelled by Close; it scopes the goroutines and the network
	// calls they make.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	groups  map[string]*group
	pending map[string]*pendingJoin // by invitation ID
	started bool
	closed  bool
	idSub   event.Subscription

	// opMu serialises the node's own operations: each is signed on the
	// heads the previous one left.
	opMu sync.Mutex
	// recMu serialises reconcile.
	recMu sync.Mutex

	serveLimit *peerlimit.Limiter // join and sync requests this node answers

	changes *workSet // groups whose state changed, for the change worker
	puts    *workSet // groups whose log is to be put in the DHT

	dropMu    sync.Mutex
	dropped   map[string]map[peer.ID]struct{} // topic → peers whose subscription was dropped
	resubAt   map[string]time.Time            // group → last resubscription
	resubWait map[string]bool                 // group → a resubscription waits for its turn
	syncAt    map[syncKey]time.Time

	closeOnce sync.Once
	closeErr  error
}

type syncKey struct {
	p     peer.ID
	group string
	why   string
}

// group is one group the node knows.
type group struct {
	id  string
	log *groups.Log
	st  atomic.Pointer[groups.State]

	// Topic handles: set and cleared by reconcile (and Close), under
	// Service.mu.
	topic      *pubsub.Topic
	sub        *pubsub.Subscription
	readerDone chan struct{}
	validating bool
	events     *pubsub.TopicEventHandler
	evCancel   context.CancelFunc
	evDone     chan struct{}

	subsMu sync.Mutex
	subs   map[*postSub]struct{}

	// members are the members by the state reconcile last saw (nil
	// before the first reconcile), under Service.recMu: the next
	// reconcile evicts those that are members no longer.
	members map[peer.ID]struct{}
	// former are the peers reconcile saw stop being members, until they
	// are members again; the sync protocol answers them the log, so that
	// they learn of it. Under formerMu.
	formerMu sync.Mutex
	former   map[peer.ID]struct{}
}

// wasMember reports whether p is one of g's former members.
func (g *group) wasMember(p peer.ID) bool {
	g.formerMu.Lock()
	defer g.formerMu.Unlock()
	_, ok := g.former[p]
	return ok
}

// state returns the group's current state.
func (g *group) state() groups.State { return *g.st.Load() }

// refresh recomputes the cached state from the log.
func (g *group) refresh() {
	st := g.log.State()
	g.st.Store(&st)
}

// New checks deps and cfg and builds a Service: it loads the persisted
// logs and pending joins. It starts nothing; Start does.
func New(deps Deps, cfg Config, opts ...Option) (*Service, error) {
	p := deps
	switch {
	case p.Host == nil:
		return nil, errors.New("groupsvc: Deps.Host is nil")
	case len(p.Key) != ed25519.PrivateKeySize:
		return nil, fmt.Errorf("groupsvc: Deps.Key: %d bytes, want an Ed25519 private key (%d)", len(p.Key), ed25519.PrivateKeySize)
	case p.Datastore == nil:
		return nil, errors.New("groupsvc: Deps.Datastore is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	self, err := lmosproto.PeerIDFromEd25519(p.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("groupsvc: Deps.Key: %w", err)
	}
	if self != p.Host.ID() {
		return nil, fmt.Errorf("groupsvc: Deps.Key is the key of %s, the host is %s", self, p.Host.ID())
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		p:          p,
		cfg:        cfg.withDefaults(),
		now:        o.now,
		self:       self,
		log:        o.log,
		ctx:        ctx,
		cancel:     cancel,
		groups:     map[string]*group{},
		pending:    map[string]*pendingJoin{},
		changes:    newWorkSet(),
		serveLimit: peerlimit.New(ServeEvery, ServeBurst),
		puts:       newWorkSet(),
		dropped:    map[string]map[peer.ID]struct{}{},
		resubAt:    map[string]time.Time{},
		resubWait:  map[string]bool{},
		syncAt:     map[syncKey]time.Time{},
	}
	if err := s.load(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("groupsvc: %w", err)
	}
	return s, nil
}

// Self returns the node's peer ID.
func (s *Service) Self() peer.ID { return s.self }

// Start serves the join and sync protocols, joins the topics of the
// node's groups on ps (nil runs without gossip: operations travel by the
// join and sync protocols and the DHT only, and there are no posts; ps
// must use strict signing, as the node configures it), and starts the background work: the change and DHT
// workers, the catch-up of every group from the DHT, syncs with members
// as they connect, and the retries of pending joins. ctx bounds the start
// itself.
func (s *Service) Start(ctx context.Context, ps *pubsub.PubSub) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return errors.New("groupsvc: start: closed")
	case s.started:
		s.mu.Unlock()
		return errors.New("groupsvc: start: already started")
	}
	s.started = true
	s.ps.Store(ps)
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("groupsvc: start: %w", err)
	}
	s.p.Host.SetStreamHandler(protocol.ID(groups.ProtocolJoin), s.handleJoin)
	s.p.Host.SetStreamHandler(protocol.ID(groups.ProtocolSync), s.handleSync)
	sub, err := s.p.Host.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		return fmt.Errorf("groupsvc: start: identify events: %w", err)
	}
	s.mu.Lock()
	s.idSub = sub
	s.mu.Unlock()
	for _, g := range s.all() {
		s.reconcile(g)
	}
	s.spawn(func() { s.watchIdentify(sub) })
	s.spawn(s.changeWorker)
	s.spawn(s.antiEntropy)
	if s.p.DHT != nil {
		s.spawn(s.putWorker)
		s.spawn(s.republishLoop)
		for _, g := range s.all() {
			if g.state().IsMember(s.self) {
				s.spawn(func() { s.catchUp(g) })
			}
		}
	}
	s.mu.RLock()
	pend := make([]*pendingJoin, 0, len(s.pending))
	for _, pj := range s.pending {
		pend = append(pend, pj)
	}
	s.mu.RUnlock()
	for _, pj := range pend {
		s.spawn(func() { s.retryPending(pj) })
	}
	return nil
}

// Close stops the background work and waits for it, stops serving the
// protocols, leaves every group topic and ends the local post
// subscriptions. It is idempotent.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		idSub := s.idSub
		s.mu.Unlock()
		s.cancel()
		s.p.Host.RemoveStreamHandler(protocol.ID(groups.ProtocolJoin))
		s.p.Host.RemoveStreamHandler(protocol.ID(groups.ProtocolSync))
		var errs []error
		if idSub != nil {
			errs = append(errs, idSub.Close())
		}
		s.wg.Wait()
		s.recMu.Lock()
		for _, g := range s.all() {
			errs = append(errs, s.leaveTopic(g))
			g.endSubs()
		}
		s.recMu.Unlock()
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("groupsvc: close: %w", err)
		}
	})
	return s.closeErr
}

// spawn runs f in a goroutine that Close waits for, unless the Service is
// closing.
func (s *Service) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Go(f)
	return true
}

// get returns the group id.
func (s *Service) get(id string) *group {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.groups[id]
}

// all returns every group the node knows.
func (s *Service) all() []*group {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	return out
}

// lookup returns the group id or an error wrapping ErrUnknownGroup.
func (s *Service) lookup(id string) (*group, error) {
	if g := s.get(id); g != nil {
		return g, nil
	}
	return nil, fmt.Errorf("group %q: %w", id, ErrUnknownGroup)
}

// adopt makes l the log of its group (a new group for the node) or merges
// it into the one held. It persists the result, reconciles and reports
// whether anything was new.
func (s *Service) adopt(l *groups.Log) (*group, bool, error) {
	s.mu.Lock()
	g := s.groups[l.ID()]
	fresh := g == nil
	if fresh {
		g = &group{id: l.ID(), log: l, subs: map[*postSub]struct{}{}}
		g.refresh()
		s.groups[g.id] = g
	}
	s.mu.Unlock()
	if fresh {
		if err := s.persist(g); err != nil {
			return g, true, err
		}
		s.changed(g)
		return g, true, nil
	}
	added, err := g.log.Merge(l)
	if err != nil {
		s.log.Debug("merge group log", "group", g.id, "err", err)
	}
	if len(added) == 0 {
		return g, false, err
	}
	g.refresh()
	if perr := s.persist(g); perr != nil {
		return g, true, perr
	}
	s.changed(g)
	return g, true, nil
}

// changed hands g to the change worker.
func (s *Service) changed(g *group) { s.changes.add(g.id) }

// changeWorker reconciles the groups whose state changed and tells
// OnChange.
func (s *Service) changeWorker() {
	for {
		ids, ok := s.changes.next(s.ctx, 0)
		if !ok {
			return
		}
		for _, id := range ids {
			g := s.get(id)
			if g == nil {
				continue
			}
			s.reconcile(g)
			if s.p.OnChange != nil {
				s.p.OnChange(id)
			}
		}
	}
}

// reconcile makes the node's topic membership match its state of g:
// joined while a member of a live group, left otherwise; and asks the
// members whose subscriptions were dropped to announce them again.
func (s *Service) reconcile(g *group) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	st := g.state()
	member := st.IsMember(s.self)
	lost := g.lostMembers(st)
	s.mu.RLock()
	joined := g.topic != nil
	s.mu.RUnlock()
	switch {
	case member && !joined:
		if err := s.joinTopic(g); err != nil {
			s.log.Warn("join group topic", "group", g.id, "err", err)
		}
	case !member && joined:
		if err := s.leaveTopic(g); err != nil {
			s.log.Warn("leave group topic", "group", g.id, "err", err)
		}
		g.endSubs()
		why := "removed"
		if st.Dissolved {
			why = "dissolved"
		}
		s.log.Info("left group", "group", g.id, "name", st.Name, "why", why)
	}
	if member {
		s.evict(g, lost)
		s.askResubscribe(g, st)
	}
}

// lostMembers returns the peers that were members of g at the previous
// reconcile and are not by st (none at the first), and notes st's
// members for the next. The caller holds recMu.
func (g *group) lostMembers(st groups.State) []peer.ID {
	prev := g.members
	g.members = make(map[peer.ID]struct{}, len(st.Members))
	for p := range st.Members {
		if st.IsMember(p) {
			g.members[p] = struct{}{}
		}
	}
	var lost []peer.ID
	for p := range prev {
		if _, ok := g.members[p]; !ok {
			lost = append(lost, p)
		}
	}
	g.formerMu.Lock()
	if g.former == nil {
		g.former = map[peer.ID]struct{}{}
	}
	for p := range g.members {
		delete(g.former, p)
	}
	for _, p := range lost {
		g.former[p] = struct{}{}
	}
	g.formerMu.Unlock()
	slices.Sort(lost)
	return lost
}

// askResubscribe asks the members (by st) whose subscriptions to g's topic
// were dropped to announce them again (askAgain).
func (s *Service) askResubscribe(g *group, st groups.State) {
	topic := groups.Topic(g.id)
	for _, p := range s.undrop(topic, st) {
		s.spawn(func() { s.askAgain(g, topic, p) })
	}
}

// askAgain asks p, a member whose subscription to g's topic this node
// dropped, to announce it again (a sync with resubscribe). An ask that
// fails (p does not hold this node as a member yet, refuses it for its
// rate, or does not answer in time) notes the drop again and is made again
// after about a second, then twice as long each time, while the next
// anti-entropy round (which asks too) is further away; unless meanwhile
// this node or p stopped being a member, or another ask took the drop
// over. A member is also asked at the next change, and when it syncs with
// this node. Without the retries, a member that synced with this node
// while an ask to it was on its way, and refused that ask (it learned
// this node's membership just after), was asked again only by the next
// round, and this node did not hear its posts until then.
func (s *Service) askAgain(g *group, topic string, p peer.ID) {
	b := backoff.New(time.Second, s.cfg.AntiEntropyEvery)
	var waited time.Duration
	for !s.syncWith(g, p, true) {
		s.drop(topic, p)
		d := b.NextBackOff()
		if waited += d; waited >= s.cfg.AntiEntropyEvery {
			return
		}
		if !backoff.Sleep(s.ctx, d) {
			return
		}
		if st := g.state(); !st.IsMember(s.self) || !st.IsMember(p) || !s.takeDrop(topic, p) {
			return
		}
	}
}

// Refused returns how many join and group-log sync requests of other
// peers this node refused for being over their rate.
func (s *Service) Refused() int64 { return s.serveLimit.Refused() }
