package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/logroute"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Errors of Publish and Subscribe.
var (
	// ErrClosed: the Fanout is closed.
	ErrClosed = errors.New("fanout: closed")
	// ErrGroupScoped: the Thing is restricted to groups (lmos:groups); its
	// events do not travel on public topics.
	ErrGroupScoped = errors.New("fanout: thing is restricted to groups; its events are not fanned out on a public topic")
	// ErrUnknownThing: the Thing's TD is not known (Deps.TD).
	ErrUnknownThing = errors.New("fanout: unknown thing")
	// ErrUnknownEvent: the Thing's TD has no such event.
	ErrUnknownEvent = errors.New("fanout: the thing has no such event")
)

// Deps are what a Fanout works with. PubSub and Self are required; the
// caller keeps ownership of the PubSub and of Local.
type Deps struct {
	// PubSub is the node's gossipsub router (required). Its options make
	// the topics' behaviour: content-derived message IDs, StrictSign,
	// flood publishing.
	PubSub *pubsub.PubSub
	// Self is the node's peer ID (required): the publisher of its own
	// Things.
	Self peer.ID
	// Local is the Invoker of the node's own Things (the Engine); required
	// for Publish.
	Local interact.Invoker
	// TD finds the TD of a Thing by publisher and id, for Subscribe's
	// checks (groups, event names). Nil: no checks.
	TD func(publisher peer.ID, thingID string) (*lmosproto.TD, bool)
	// TopicScore, if set, are the peer-score parameters of every events
	// topic (pubsub.Topic.SetScoreParams; the PubSub must have peer
	// scoring on). Without them a topic has no topic score, so messages
	// its validator rejects do not count against the peer that sent them
	// (P4). The node passes the parameters of its announce topic.
	TopicScore *pubsub.TopicScoreParams
}

// Fanout publishes the node's own Things' events on their topics and
// delivers the events of other nodes' Things to local subscribers. It is
// safe for concurrent use. It owns one goroutine per published Thing and
// one per topic with local subscribers; Close stops them.
type Fanout struct {
	p   Deps
	cfg Config
	log *slog.Logger
	now func() time.Time

	ctx    context.Context // the Fanout's lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	topics    map[string]*joined     // joined topics by name
	published map[string]*publishing // own Things by id
	// feedEnds holds back repeated log lines of an own Thing's feed ending
	// across its versions (a new version publishes it again); an entry
	// lives until the Thing is removed.
	feedEnds map[string]*logroute.Repeats
	subs     map[string]*topicSub // topics with local subscribers by name
}

// joined is a topic this node has joined, with its validator, shared by
// the publisher and the local subscribers of the topic.
type joined struct {
	name  string
	topic *pubsub.Topic
	refs  int
}

// New returns a Fanout on deps.PubSub. It joins no topic yet.
func New(deps Deps, cfg Config, opts ...Option) (*Fanout, error) {
	if deps.PubSub == nil {
		return nil, errors.New("fanout: Deps.PubSub is nil")
	}
	if err := deps.Self.Validate(); err != nil {
		return nil, fmt.Errorf("fanout: Deps.Self: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Fanout{
		p:         deps,
		cfg:       cfg.withDefaults(),
		log:       o.log,
		now:       o.now,
		ctx:       ctx,
		cancel:    cancel,
		topics:    map[string]*joined{},
		published: map[string]*publishing{},
		feedEnds:  map[string]*logroute.Repeats{},
		subs:      map[string]*topicSub{},
	}, nil
}

// Close stops publishing, ends every local subscription (its channel gets
// a 503 error message and is closed), leaves every topic and waits for the
// Fanout's goroutines. Close it before the PubSub's context ends.
func (f *Fanout) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	subs := make([]*topicSub, 0, len(f.subs))
	for _, ts := range f.subs {
		subs = append(subs, ts)
	}
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()

	var errs []error
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range subs {
		for c := range ts.consumers {
			c.endLocked(shutdown(c))
		}
		ts.sub.Cancel()
		delete(f.subs, ts.j.name)
		errs = append(errs, f.releaseLocked(ts.j))
	}
	for id, pb := range f.published {
		delete(f.published, id)
		errs = append(errs, f.releaseLocked(pb.j))
	}
	return errors.Join(errs...)
}

// joinLocked joins the events topic of thingID of publisher, registering
// its validator, or takes one more reference to it. Called with f.mu held.
func (f *Fanout) joinLocked(publisher peer.ID, thingID string) (*joined, error) {
	name := TopicName(publisher, thingID)
	if j := f.topics[name]; j != nil {
		j.refs++
		return j, nil
	}
	v := newValidator(publisher, thingID, f.cfg, f.now)
	if err := f.p.PubSub.RegisterTopicValidator(name, pubsub.ValidatorEx(v.validate)); err != nil {
		return nil, fmt.Errorf("fanout: thing %q of %s: validator: %w", thingID, publisher, err)
	}
	t, err := f.p.PubSub.Join(name)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("fanout: thing %q of %s: join: %w", thingID, publisher, err),
			f.p.PubSub.UnregisterTopicValidator(name))
	}
	if f.p.TopicScore != nil {
		if err := t.SetScoreParams(f.p.TopicScore); err != nil {
			return nil, errors.Join(fmt.Errorf("fanout: thing %q of %s: score parameters: %w", thingID, publisher, err),
				t.Close(), f.p.PubSub.UnregisterTopicValidator(name))
		}
	}
	j := &joined{name: name, topic: t, refs: 1}
	f.topics[name] = j
	f.log.Debug("joined events topic", "topic", name)
	return j, nil
}

// releaseLocked drops a reference to j and leaves the topic with the
// last. Subscriptions on it must be cancelled already.
func (f *Fanout) releaseLocked(j *joined) error {
	j.refs--
	if j.refs > 0 {
		return nil
	}
	delete(f.topics, j.name)
	f.log.Debug("left events topic", "topic", j.name)
	return errors.Join(j.topic.Close(), f.p.PubSub.UnregisterTopicValidator(j.name))
}
