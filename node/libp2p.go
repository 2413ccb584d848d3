package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"
	ma "github.com/multiformats/go-multiaddr"

	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
)

// This file is the only place where Config becomes libp2p options.

// newHost builds the libp2p host described by cfg, with identity key. The
// host does not listen yet: listenHost does that in Start, so New binds no
// socket.
func newHost(cfg Config, key crypto.PrivKey) (_ host.Host, err error) {
	cm, err := connmgr.NewConnManager(cfg.ConnMgr.Low, cfg.ConnMgr.High,
		connmgr.WithGracePeriod(time.Duration(cfg.ConnMgr.Grace)))
	if err != nil {
		return nil, fmt.Errorf("connMgr: %w", err)
	}
	rm, err := newResourceManager(cfg.Resources)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("resources: %w", err), cm.Close())
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.NoListenAddrs,
		libp2p.UserAgent("lmosnode/" + Version),

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
		// No metrics endpoint exists yet; metrics also register with the
		// process-global Prometheus registry, which several nodes in one
		// test process would share.
		libp2p.DisableMetrics(),
	}
	// UPnP/NAT-PMP port mapping (libp2p.NATPortMap) is deliberately not
	// enabled: it talks to the LAN gateway, which a node must not do
	// unasked.
	if cfg.AutoNAT {
		opts = append(opts, libp2p.EnableAutoNATv2())
	}
	if cfg.RelayClient {
		opts = append(opts, libp2p.EnableRelay())
	} else {
		opts = append(opts, libp2p.DisableRelay())
	}
	if cfg.HolePunching {
		opts = append(opts, libp2p.EnableHolePunching())
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		// libp2p closes them only on some failure paths; both Close
		// methods tolerate a second call.
		return nil, errors.Join(fmt.Errorf("libp2p: %w", err), rm.Close(), cm.Close())
	}
	return h, nil
}

// newResourceManager scales libp2p's default limits (with its default
// service limits) to the machine and caps the system scope with cfg.
func newResourceManager(cfg ResourcesConfig) (network.ResourceManager, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	scaled := limits.AutoScale()
	system := rcmgr.ResourceLimits{
		Memory:  rcmgr.LimitVal64(int64(cfg.MaxMemoryMB) << 20),
		FD:      rcmgr.LimitVal(cfg.MaxFDs),
		Conns:   rcmgr.LimitVal(cfg.MaxConns),
		Streams: rcmgr.LimitVal(cfg.MaxStreams),
	}
	// Zero is rcmgr's DefaultLimit: the scaled value stays.
	concrete := rcmgr.PartialLimitConfig{System: system}.Build(scaled)
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(concrete))
}

// listenAddrs parses cfg.Listen (already validated).
func listenAddrs(cfg Config) ([]ma.Multiaddr, error) {
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

// listenHost makes h listen on every address of cfg.Listen and fails,
// naming the address, if any one cannot be bound.
func listenHost(h host.Host, cfg Config) error {
	addrs, err := listenAddrs(cfg)
	if err != nil {
		return err
	}
	for i, a := range addrs {
		if err := h.Network().Listen(a); err != nil {
			return fmt.Errorf("listen[%d]: %s: %w", i, a, err)
		}
	}
	return nil
}
