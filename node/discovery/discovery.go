package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	routingdisc "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	"github.com/libp2p/zeroconf/v2"
)

// Deps are what a Service works with. Host is required; the caller keeps
// ownership of both and closes them after Close.
type Deps struct {
	// Host is the libp2p host that discovery connects to other LMOS nodes.
	Host host.Host
	// Routing, if set, turns on DHT rendezvous: the service advertises and
	// finds LMOS nodes through it (the node passes its *kaddht.IpfsDHT).
	// Without it the service discovers by mDNS and bootstrap peers only.
	Routing routing.ContentRouting
}

// Service discovers LMOS nodes by mDNS, bootstrap peers and DHT rendezvous
// and connects the host to them (see the package doc). Its methods are safe
// for concurrent use.
type Service struct {
	h   host.Host
	cfg Config
	log *slog.Logger
	rd  *routingdisc.RoutingDiscovery // nil without Deps.Routing

	// ctx is cancelled by Close; it scopes the service's goroutines.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// dialSlots bounds the dials in flight (maxConcurrentDials).
	dialSlots chan struct{}
	// found carries mDNS finds from go-libp2p's callback to mdnsLoop.
	found chan peer.AddrInfo
	// mdnsYield is mdnsYield, or less in tests.
	mdnsYield time.Duration
	// notifiee tracks connections for the source map.
	notifiee *network.NotifyBundle

	mu       sync.Mutex
	started  bool
	closed   bool
	mdns     mdns.Service
	wot      *zeroconf.Server     // the WoT directory's DNS-SD advertisement
	sources  map[peer.ID]Source   // connected peers found by our ways
	pending  map[peer.ID]Source   // dials of ours in flight
	failures map[peer.ID]*failure // peers whose last dial failed
	inflight int                  // len(pending), kept for the peer limit

	closeOnce sync.Once
	closeErr  error
}

// New builds a discovery service for deps.Host. It validates cfg and
// starts tracking the host's connections (for Peers) but dials nothing and
// starts no goroutine: Start does.
func New(deps Deps, cfg Config, opts ...Option) (*Service, error) {
	h := deps.Host
	if h == nil {
		return nil, errors.New("discovery: Deps.Host is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		h:         h,
		cfg:       cfg,
		log:       o.logger,
		ctx:       ctx,
		cancel:    cancel,
		dialSlots: make(chan struct{}, maxConcurrentDials),
		// mDNS answers arrive in bursts of one per LAN peer; more than
		// this many undialled finds at once are dropped and come again
		// with the next announcement.
		found:     make(chan peer.AddrInfo, 64),
		mdnsYield: mdnsYield,
		sources:   make(map[peer.ID]Source),
		pending:   make(map[peer.ID]Source),
		failures:  make(map[peer.ID]*failure),
	}
	if deps.Routing != nil {
		s.rd = routingdisc.NewRoutingDiscovery(deps.Routing)
	}
	s.notifiee = &network.NotifyBundle{
		ConnectedF:    s.connected,
		DisconnectedF: s.disconnected,
	}
	h.Network().Notify(s.notifiee)
	return s, nil
}

// Start starts mDNS (if Config.MDNS), the bootstrap loop (if there are
// bootstrap peers) and the rendezvous loops (if Deps.Routing is set). Call
// it after the host listens: mDNS announces the host's listen addresses.
// If mDNS cannot start (no multicast-capable interface, no IP address to
// announce), Start logs a warning and runs without it. It fails only on a
// closed or already started service; the caller still calls Close.
func (s *Service) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("discovery: start: service is closed")
	case s.started:
		return errors.New("discovery: start: already started")
	}
	s.started = true

	mdnsOn := false
	if s.cfg.MDNS {
		svc := mdns.NewMdnsService(s.h, mdnsServiceName, mdnsNotifee{s})
		if err := svc.Start(); err != nil {
			// A node must work alone, and on a machine without a
			// multicast interface it still has bootstrap peers and the
			// DHT. go-libp2p's Close tolerates a half-started service.
			s.log.Warn("mdns unavailable; local discovery is off", "err", errors.Join(err, svc.Close()))
		} else {
			s.mdns = svc
			mdnsOn = true
			s.wg.Go(s.mdnsLoop)
		}
	}
	if len(s.cfg.Bootstrap) > 0 {
		s.wg.Go(s.bootstrapLoop)
	}
	if s.rd != nil {
		s.wg.Go(s.advertiseLoop)
		s.wg.Go(s.findLoop)
	}
	s.log.Info("discovery started",
		"mdns", mdnsOn, "bootstrap", len(s.cfg.Bootstrap), "rendezvous", s.rd != nil)
	return nil
}

// Close stops mDNS and every loop and dial of the service, waits for them
// and stops tracking connections. Connections already made stay open. It
// is idempotent and safe to call concurrently; every call returns the first
// call's result.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		svc, wot := s.mdns, s.wot
		s.mu.Unlock()

		s.cancel()
		if wot != nil {
			wot.Shutdown()
		}
		var errs []error
		if svc != nil {
			if err := svc.Close(); err != nil {
				errs = append(errs, fmt.Errorf("mdns: %w", err))
			}
		}
		s.wg.Wait()
		s.h.Network().StopNotify(s.notifiee)
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("discovery: close: %w", err)
		}
	})
	return s.closeErr
}

// Connect dials ai now, ignoring the peer limit and any backoff (also the
// swarm's, unless ai has relayed addresses), and records the peer as
// SourceConnect. It is what `lmosnode connect` calls; ctx bounds the dial.
func (s *Service) Connect(ctx context.Context, ai peer.AddrInfo) error {
	if ai.ID == s.h.ID() {
		return fmt.Errorf("discovery: connect %s: that is this node", ai.ID)
	}
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("discovery: connect %s: service is closed", ai.ID)
	}
	if s.beginDial(ai.ID, SourceConnect) {
		defer s.endDial(ai.ID)
	}
	// Otherwise another dial of ours is in flight; dial anyway, the swarm
	// joins the two.
	return s.connect(forceDirect(ctx, ai, "lmos connect"), ai, SourceConnect)
}
