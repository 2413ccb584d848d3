package interact

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/lmosnode/lmosnode/proto"
)

// newHost starts a libp2p host listening on 127.0.0.1 over TCP only,
// closed when the test ends.
func newHost(t testing.TB, extra ...libp2p.Option) host.Host {
	t.Helper()
	h, err := libp2p.New(append([]libp2p.Option{
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// connect makes a know b's addresses and connects them.
func connect(t testing.TB, a, b host.Host) {
	t.Helper()
	if err := a.Connect(context.Background(), peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// overP2P serves backend's engine on an owner host and returns the
// consumer host's Client bound to it.
func overP2P(t testing.TB, e *Engine, opts TransportOptions, extra ...func(testing.TB) libp2p.Option) (Invoker, *Client, host.Host) {
	t.Helper()
	hostOpts := func() []libp2p.Option {
		var o []libp2p.Option
		for _, f := range extra {
			o = append(o, f(t))
		}
		return o
	}
	owner, consumer := newHost(t, hostOpts()...), newHost(t, hostOpts()...)
	srv, err := NewServer(owner, e, opts)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(consumer, opts)
	if err != nil {
		t.Fatal(err)
	}
	// cleanups run last-in first-out: client, server, then the hosts
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(func() { cl.Close() })
	connect(t, consumer, owner)
	return cl.Invoker(owner.ID()), cl, owner
}

func p2pSDKFixture(codec proto.Codec) fixtureFunc {
	return func(t *testing.T, opts Options) *fixture {
		f := engineFixture(t, opts)
		f.inv, _, _ = overP2P(t, f.inv.(*Engine), TransportOptions{Codec: codec})
		return f
	}
}

func TestPatternsP2PSDK(t *testing.T)     { runPatterns(t, p2pSDKFixture(proto.CBOR)) }
func TestPatternsP2PSDKJSON(t *testing.T) { runPatterns(t, p2pSDKFixture(proto.JSON)) }

// manyStreams is a resource manager that lets one peer hold thousands of
// streams, as a node serving many concurrent interactions configures for
// proto.ProtocolInteract (go-libp2p's default scaled limits allow a few
// hundred streams per peer).
func manyStreams(t testing.TB) libp2p.Option {
	t.Helper()
	streams := rcmgr.ResourceLimits{Streams: 8192, StreamsInbound: 8192, StreamsOutbound: 8192}
	cfg := rcmgr.PartialLimitConfig{
		System: streams, Transient: streams, PeerDefault: streams,
		ProtocolDefault: streams, ProtocolPeerDefault: streams,
		ServiceDefault: streams, ServicePeerDefault: streams,
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(cfg.Build(rcmgr.DefaultLimits.AutoScale())))
	if err != nil {
		t.Fatal(err)
	}
	return libp2p.ResourceManager(rm)
}
