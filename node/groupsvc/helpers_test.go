package groupsvc_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"sync/atomic"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// member is one test peer: a loopback host, gossipsub whose peer and
// subscription filters are its service's, an in-memory datastore, and
// the service.
type member struct {
	t     *testing.T
	key   ed25519.PrivateKey
	host  host.Host
	ps    *pubsub.PubSub
	store ds.Batching
	svc   *groupsvc.Service
	// changes counts OnChange calls.
	changes atomic.Int64

	psCancel context.CancelFunc
}

// newMember starts a member with a fresh key and datastore.
func newMember(t *testing.T) *member {
	t.Helper()
	return newMemberConfig(t, groupsvc.Config{})
}

// newMemberConfig is newMember with cfg as the service's configuration.
func newMemberConfig(t *testing.T, cfg groupsvc.Config) *member {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return startMemberWith(t, key, dssync.MutexWrap(ds.NewMapDatastore()), nil, cfg)
}

// startMember starts a member with key and store (a restart when they
// were another member's).
func startMember(t *testing.T, key ed25519.PrivateKey, store ds.Batching) *member {
	t.Helper()
	return startMemberOps(t, key, store, nil)
}

// startMemberOps is startMember with ops as the service's cache of
// verified operations (nil: none).
func startMemberOps(t *testing.T, key ed25519.PrivateKey, store ds.Batching, ops *groups.OpCache) *member {
	t.Helper()
	return startMemberWith(t, key, store, ops, groupsvc.Config{})
}

// startMemberWith is startMemberOps with cfg as the service's
// configuration.
func startMemberWith(t *testing.T, key ed25519.PrivateKey, store ds.Batching, ops *groups.OpCache, cfg groupsvc.Config) *member {
	t.Helper()
	priv, err := crypto.UnmarshalEd25519PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	m := &member{t: t, key: key, host: h, store: store}
	// The service first: gossipsub is built with its peer and
	// subscription filters, and handed to it at Start.
	m.svc, err = groupsvc.New(groupsvc.Deps{
		Host: h, Key: key, Datastore: store, Ops: ops,
		OnChange: func(string) { m.changes.Add(1) },
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.psCancel = cancel
	gs := pubsub.DefaultGossipSubParams()
	gs.HeartbeatInterval = 100 * time.Millisecond
	gs.HeartbeatInitialDelay = 10 * time.Millisecond
	m.ps, err = pubsub.NewGossipSub(ctx, h,
		pubsub.WithGossipSubParams(gs),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithFloodPublish(true),
		pubsub.WithMessageIdFn(func(msg *pubsubpb.Message) string {
			sum := sha256.Sum256(append([]byte(msg.GetTopic()+"\x00"), msg.GetData()...))
			return string(sum[:])
		}),
		pubsub.WithPeerFilter(m.svc.PeerFilter),
		pubsub.WithSubscriptionFilter(m.svc.SubscriptionFilter()),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.svc.Start(context.Background(), m.ps); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.stop)
	return m
}

// stop closes the member (idempotent enough for Cleanup after a restart).
func (m *member) stop() {
	if m.svc == nil {
		return
	}
	if err := m.svc.Close(); err != nil {
		m.t.Errorf("Close: %v", err)
	}
	m.psCancel()
	if err := m.host.Close(); err != nil {
		m.t.Errorf("host Close: %v", err)
	}
	m.svc = nil
}

func (m *member) id() peer.ID { return m.host.ID() }

// connect links m to o.
func (m *member) connect(o *member) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.host.Connect(ctx, peer.AddrInfo{ID: o.id(), Addrs: o.host.Addrs()}); err != nil {
		m.t.Fatal(err)
	}
}

// waitFor polls cond until it holds; timeout is a bound for a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForState(t, what, func() (bool, string) { return cond(), "" })
}

// waitForState is waitFor for a condition that also describes the state
// it saw, which a failure reports.
func waitForState(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if state != "" {
				state = ": " + state
			}
			t.Fatalf("%s: not after 20s%s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
