package mqttgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/logroute"
	"github.com/lmosnode/lmosnode/proto"
)

// ThingLister gives the gateway the Things to expose: the node's own
// Things. It is called by Start, Sync and every Config.SyncInterval and
// must be safe for concurrent use.
type ThingLister interface {
	ExposedThings() []*proto.TD
}

// ThingListerFunc adapts a function to ThingLister.
type ThingListerFunc func() []*proto.TD

// ExposedThings implements ThingLister.
func (f ThingListerFunc) ExposedThings() []*proto.TD { return f() }

// Gateway exposes Things on an MQTT broker (see the package
// documentation). It is safe for concurrent use.
type Gateway struct {
	cfg    Config
	log    *slog.Logger
	caller string
	inv    interact.Invoker
	things ThingLister
	// exposes is Deps.Exposes.
	exposes func(directory.Entry) bool
	topics  topics

	ctx    context.Context // the gateway's lifetime; cancelled by Close
	cancel context.CancelFunc
	sem    chan struct{} // in-flight requests
	// rejecting bounds the 503 answers being published.
	rejecting chan struct{}
	wg        sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	cm      *autopaho.ConnectionManager
	exposed map[string]*exposed // by thingID
	// sessions are the running invocations follow-ups can reach (see
	// liveSession), by key.
	sessions map[string]*liveSession

	closeOnce sync.Once
	closeErr  error
}

// exposed is one Thing served on the broker.
type exposed struct {
	td     *proto.TD
	cancel context.CancelFunc // stops its event and observation sessions
}

// New returns a gateway that serves the Things of deps.Things through
// deps.Invoker once started. It does not connect yet.
func New(deps Deps, cfg Config, opts ...Option) (*Gateway, error) {
	switch {
	case deps.Invoker == nil:
		return nil, errors.New("mqttgw: Deps.Invoker is nil")
	case deps.Things == nil:
		return nil, errors.New("mqttgw: Deps.Things is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{log: slog.Default()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Gateway{
		cfg:       cfg,
		log:       o.log.With("component", "mqttgw", "broker", cfg.BrokerURL, "clientID", cfg.ClientID),
		caller:    cfg.CallerID,
		inv:       deps.Invoker,
		things:    deps.Things,
		exposes:   deps.Exposes,
		topics:    newTopics(cfg.Prefix),
		ctx:       ctx,
		cancel:    cancel,
		sem:       make(chan struct{}, cfg.MaxInFlight),
		rejecting: make(chan struct{}, cfg.MaxInFlight),
		exposed:   make(map[string]*exposed),
		sessions:  make(map[string]*liveSession),
	}, nil
}

// Start connects to the broker in the background (autopaho retries until
// Close) and exposes the Things once connected (see Sync). It fails if the
// gateway was started or closed before.
func (g *Gateway) Start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("mqttgw: Start: gateway closed")
	}
	if g.started {
		return errors.New("mqttgw: Start: already started")
	}
	u, err := url.Parse(g.cfg.BrokerURL)
	if err != nil {
		return fmt.Errorf("mqttgw: brokerURL %q: %w", g.cfg.BrokerURL, err)
	}
	// A broker down for hours would otherwise be warned about at every
	// reconnection attempt.
	var connMu sync.Mutex
	var connFails logroute.Repeats
	cc := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     uint16(g.cfg.KeepAlive / time.Second),
		CleanStartOnInitialConnection: true,
		ConnectTimeout:                g.cfg.ConnectTimeout,
		ReconnectBackoff:              reconnectBackoff(g.cfg.ReconnectMin, g.cfg.ReconnectMax),
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			connMu.Lock()
			connFails.Reset()
			connMu.Unlock()
			g.log.Info("mqtt connected", "broker", g.cfg.BrokerURL)
			g.goOwned(func() { g.subscribeAll(cm) })
		},
		OnConnectError: func(err error) {
			connMu.Lock()
			level, repeated := connFails.Level(slog.LevelWarn, err.Error(), time.Now())
			connMu.Unlock()
			g.log.Log(context.Background(), level, "mqtt broker connection failed; retrying", "broker", g.cfg.BrokerURL,
				"err", err, "retryWithin", g.cfg.ReconnectMax, "repeated", repeated)
		},
		ClientConfig: paho.ClientConfig{
			ClientID:          g.cfg.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){g.onPublish},
			OnClientError: func(err error) {
				g.log.Warn("mqtt client error", "broker", g.cfg.BrokerURL, "err", err)
			},
		},
	}
	// The connection manager has its own context: Close disconnects it
	// only after every session has ended.
	cm, err := autopaho.NewConnection(context.Background(), cc)
	if err != nil {
		return fmt.Errorf("mqttgw: connect %s: %w", g.cfg.BrokerURL, err)
	}
	g.cm = cm
	g.started = true
	g.wg.Go(g.syncLoop)
	return nil
}

// AwaitConnection waits until the gateway is connected to the broker (or
// ctx is done).
func (g *Gateway) AwaitConnection(ctx context.Context) error {
	g.mu.Lock()
	cm := g.cm
	g.mu.Unlock()
	if cm == nil {
		return errors.New("mqttgw: AwaitConnection: not started")
	}
	return cm.AwaitConnection(ctx)
}

// Close stops serving, ends every session the gateway holds, clears
// nothing at the broker (retained values stay for the next start) and
// disconnects. It may be called any number of times.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.mu.Lock()
		g.closed = true
		cm := g.cm
		for id, x := range g.exposed {
			x.cancel()
			delete(g.exposed, id)
		}
		g.mu.Unlock()
		g.closeSessions()
		g.cancel()
		g.wg.Wait()
		if cm != nil {
			ctx, cancel := context.WithTimeout(context.Background(), g.cfg.ConnectTimeout)
			defer cancel()
			if err := cm.Disconnect(ctx); err != nil {
				g.closeErr = fmt.Errorf("mqttgw: disconnect from %s: %w", g.cfg.BrokerURL, err)
			}
		}
	})
	return g.closeErr
}

// goOwned runs f on a goroutine that Close waits for, unless the gateway
// is closing. It reports whether f was started.
func (g *Gateway) goOwned(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.goOwnedLocked(f)
}

// goOwnedLocked is goOwned with g.mu held.
func (g *Gateway) goOwnedLocked(f func()) bool {
	if g.closed {
		return false
	}
	g.wg.Go(f)
	return true
}

// syncLoop calls Sync once connected and then every SyncInterval.
func (g *Gateway) syncLoop() {
	if g.AwaitConnection(g.ctx) != nil {
		return
	}
	t := time.NewTicker(g.cfg.SyncInterval)
	defer t.Stop()
	for {
		if err := g.Sync(g.ctx); err != nil && g.ctx.Err() == nil {
			g.log.Warn("mqtt sync failed", "err", err)
		}
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync re-reads the ThingLister: Things new to the list are exposed
// (subscriptions, event and observation sessions), Things no longer in it
// stop being served and their retained property values are cleared. A
// Thing stays exposed with the TD it had when it was first exposed.
// Subscriptions fail harmlessly while the broker is unreachable: the
// gateway subscribes again on every connection.
func (g *Gateway) Sync(ctx context.Context) error {
	tds := g.things.ExposedThings()
	want := make(map[string]*proto.TD, len(tds))
	for _, td := range tds {
		if td != nil && td.ID != "" {
			want[td.ID] = td
		}
	}
	var added []*proto.TD
	var removed []*exposed
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errors.New("mqttgw: Sync: gateway closed")
	}
	for id, x := range g.exposed {
		if _, ok := want[id]; !ok {
			x.cancel()
			delete(g.exposed, id)
			removed = append(removed, x)
		}
	}
	for id, td := range want {
		if _, ok := g.exposed[id]; ok {
			continue
		}
		tctx, cancel := context.WithCancel(g.ctx)
		g.exposed[id] = &exposed{td: td, cancel: cancel}
		g.startFeeds(tctx, td)
		added = append(added, td)
	}
	cm := g.cm
	g.mu.Unlock()
	if cm == nil {
		return nil
	}
	var errs []error
	for _, td := range added {
		g.log.Info("mqtt exposing thing", "thingID", td.ID)
		errs = append(errs, g.subscribe(ctx, cm, td.ID))
	}
	for _, x := range removed {
		g.log.Info("mqtt withdrawing thing", "thingID", x.td.ID)
		errs = append(errs, g.unsubscribe(ctx, cm, x.td))
	}
	return errors.Join(errs...)
}

// subscribeAll subscribes to the request topics of every exposed Thing
// (after a (re)connection).
func (g *Gateway) subscribeAll(cm *autopaho.ConnectionManager) {
	g.mu.Lock()
	ids := make([]string, 0, len(g.exposed))
	for id := range g.exposed {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	for _, id := range ids {
		if err := g.subscribe(g.ctx, cm, id); err != nil && g.ctx.Err() == nil {
			g.log.Warn("mqtt subscribe failed", "thingID", id, "err", err)
		}
	}
}

func (g *Gateway) subscribe(ctx context.Context, cm *autopaho.ConnectionManager, thingID string) error {
	filters := g.topics.requestFilters(thingID)
	sub := &paho.Subscribe{}
	for _, f := range filters {
		sub.Subscriptions = append(sub.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: g.cfg.QoS, NoLocal: true})
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.PublishTimeout)
	defer cancel()
	ack, err := cm.Subscribe(ctx, sub)
	if err != nil {
		return fmt.Errorf("mqttgw: subscribe to %v for thing %q: %w", filters, thingID, err)
	}
	for i, rc := range ack.Reasons {
		if rc >= 0x80 {
			return fmt.Errorf("mqttgw: subscribe to %q for thing %q: refused by the broker (reason 0x%02x)", filters[min(i, len(filters)-1)], thingID, rc)
		}
	}
	return nil
}

func (g *Gateway) unsubscribe(ctx context.Context, cm *autopaho.ConnectionManager, td *proto.TD) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.PublishTimeout)
	defer cancel()
	filters := g.topics.requestFilters(td.ID)
	var errs []error
	if _, err := cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: filters}); err != nil {
		errs = append(errs, fmt.Errorf("mqttgw: unsubscribe from %v for thing %q: %w", filters, td.ID, err))
	}
	for name, p := range td.Properties {
		if p != nil && p.Observable != nil && *p.Observable {
			// An empty retained message deletes the retained value.
			topic := g.topics.property(td.ID, name)
			if _, err := cm.Publish(ctx, &paho.Publish{Topic: topic, QoS: g.cfg.QoS, Retain: true}); err != nil {
				errs = append(errs, fmt.Errorf("mqttgw: clear retained %q: %w", topic, err))
			}
		}
	}
	return errors.Join(errs...)
}

// connection returns the connection manager (nil before Start).
func (g *Gateway) connection() *autopaho.ConnectionManager {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cm
}

// publish publishes one envelope, bounded by PublishTimeout.
func (g *Gateway) publish(ctx context.Context, p *paho.Publish) error {
	cm := g.connection()
	if cm == nil {
		return errors.New("mqttgw: not started")
	}
	p.QoS = g.cfg.QoS
	ctx, cancel := context.WithTimeout(ctx, g.cfg.PublishTimeout)
	defer cancel()
	if _, err := cm.Publish(ctx, p); err != nil {
		return fmt.Errorf("mqttgw: publish to %q: %w", p.Topic, err)
	}
	return nil
}

// reconnectBackoff adapts the node's backoff (node/backoff) to autopaho's:
// no delay before the first attempt of a (re)connection, then lo growing,
// with jitter, up to hi. autopaho calls it from its one connecting
// goroutine, counting attempts from 0 for each connection it establishes.
func reconnectBackoff(lo, hi time.Duration) autopaho.Backoff {
	b := backoff.New(lo, hi)
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			b.Reset()
			return 0
		}
		return b.NextBackOff()
	}
}
