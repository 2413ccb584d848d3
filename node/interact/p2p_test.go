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
func overP2P(t testing.TB, e *Engine, cfg TransportConfig, extra ...func(testing.TB) libp2p.Option) (Invoker, *Client, host.Host) {
	t.Helper()
	return overP2PWith(t, e, cfg, nil, extra...)
}

// overP2PWith is overP2P with a Client built with clientOpts.
func overP2PWith(t testing.TB, e *Engine, cfg TransportConfig, clientOpts []Option, extra ...func(testing.TB) libp2p.Option) (Invoker, *Client, host.Host) {
	t.Helper()
	hostOpts := func() []libp2p.Option {
		var o []libp2p.Option
		for _, f := range extra {
			o = append(o, f(t))
		}
		return o
	}
	owner, consumer := newHost(t, hostOpts()...), newHost(t, hostOpts()...)
	srv, err := NewServer(ServerDeps{Host: owner, Invoker: e}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(ClientDeps{Host: consumer}, cfg, clientOpts...)
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
	return func(t *testing.T, cfg EngineConfig) *fixture {
		f := engineFixture(t, cfg)
		f.inv, _, _ = overP2PWith(t, f.inv.(*Engine), TransportConfig{}, []Option{WithCodec(codec)})
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

type ownersFunc func(ctx context.Context, thingID string) (peer.ID, error)

func (f ownersFunc) Owner(ctx context.Context, thingID string) (peer.ID, error) {
	return f(ctx, thingID)
}

// A consumer talks to its own node only: the router sends what the node
// owns to its engine and the rest to the owner node.
func TestRouter(t *testing.T) {
	f := engineFixture(t, EngineConfig{})
	remote, cl, owner := overP2P(t, f.inv.(*Engine), TransportConfig{})
	_ = remote
	ownEngine, err := NewEngine(EngineDeps{Things: ThingsFunc(func(string) (*proto.TD, bool) { return nil, false })}, EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer ownEngine.Close()
	self := cl.h.ID()
	r := NewRouter(self, ownEngine, cl, ownersFunc(func(_ context.Context, id string) (peer.ID, error) {
		switch id {
		case testThingID:
			return owner.ID(), nil
		case "urn:example:mine":
			return self, nil
		}
		return "", ErrUnknownThing
	}))
	got := collect(t, invoke(t, r, request(proto.MsgReadProperty, "temperature")))
	if len(got) != 1 || got[0].Value.String() != "21.5" {
		t.Fatalf("remote Thing: %+v", got)
	}
	m := request(proto.MsgReadProperty, "x")
	m.ThingID = "urn:example:mine"
	got = collect(t, invoke(t, r, m))
	wantError(t, got[0], "404", "this node has no Thing") // the local engine answered
	m.ThingID = "urn:example:nowhere"
	got = collect(t, invoke(t, r, m))
	wantError(t, got[0], "404", "no node publishes")
}
