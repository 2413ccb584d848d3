// Package tddtest provides what tests of the tdd API need: a Publisher that
// signs with a test key and stores into a real directory (the shipped
// Publisher is the federation's), fakes of Finder and Peers, and Env, an
// httptest server of a tdd.Handler over an in-memory directory. It is for
// tests only.
package tddtest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	datastore "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/own"
	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Epoch is the tests' start time.
var Epoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{now: Epoch} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Identity is a signing identity derived from a one-byte seed, so tests
// are deterministic.
type Identity struct {
	Key ed25519.PrivateKey
	ID  peer.ID
}

// NewIdentity derives the identity of seed.
func NewIdentity(seed byte) Identity {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	key := ed25519.NewKeyFromSeed(s)
	id, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil { // impossible: an Ed25519 key always has a peer ID
		panic(err)
	}
	return Identity{Key: key, ID: id}
}

// DID returns the identity's did:key.
func (i Identity) DID() string { return lmosproto.DIDKey(i.Key.Public().(ed25519.PublicKey)) }

// Publisher implements tdd.Publisher the way the federation does, minus
// the announcement: it signs with Self's key, bumps lmos:seq above every
// version held and puts the record into Dir.
type Publisher struct {
	Dir  *directory.Directory
	Self Identity
	Now  func() time.Time

	mu sync.Mutex
	// Published counts successful Publish and Remove calls.
	Published int
}

// Publish implements tdd.Publisher.
func (p *Publisher) Publish(_ context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	td = td.Clone()
	held := uint64(0)
	if e, ok := p.Dir.Latest(p.Self.ID, td.ID); ok {
		held = e.Seq
	}
	td.Seq = max(td.Seq, held) + 1
	rec, err := lmosproto.SignThing(td, p.Self.Key, p.Now())
	if err != nil {
		return directory.Entry{}, 0, err
	}
	change, err := p.Dir.Put(rec, local)
	if err != nil {
		return directory.Entry{}, change, err
	}
	e, ok := p.Dir.Get(p.Self.ID, td.ID)
	if !ok {
		return directory.Entry{}, change, fmt.Errorf("publish %q: not in the directory after put", td.ID)
	}
	p.Published++
	return e, change, nil
}

// Remove implements tdd.Publisher.
func (p *Publisher) Remove(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.Dir.Latest(p.Self.ID, id)
	if !ok || e.Tombstone {
		return fmt.Errorf("remove %q: no such own thing", id)
	}
	rec, err := lmosproto.SignTombstone(id, e.Seq+1, p.Self.Key, p.Now())
	if err != nil {
		return err
	}
	if _, err := p.Dir.Put(rec, nil); err != nil {
		return err
	}
	p.Published++
	return nil
}

// LookupFunc implements tdd.Finder with a function.
type LookupFunc func(ctx context.Context, id string) error

// LookupCapability implements tdd.Finder.
func (f LookupFunc) LookupCapability(ctx context.Context, id string) error {
	return f(ctx, id)
}

// Peers implements tdd.Peers with a fixed list; Connect adds the peer
// dialled, or fails with ConnectErr.
type Peers struct {
	mu         sync.Mutex
	List       []tdd.PeerInfo
	ConnectErr error
}

// Peers implements tdd.Peers.
func (p *Peers) Peers() []tdd.PeerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]tdd.PeerInfo(nil), p.List...)
}

// Connect implements tdd.Peers.
func (p *Peers) Connect(ctx context.Context, addr string) (tdd.PeerInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ConnectErr != nil {
		return tdd.PeerInfo{}, p.ConnectErr
	}
	if err := ctx.Err(); err != nil {
		return tdd.PeerInfo{}, err
	}
	info, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return tdd.PeerInfo{}, err
	}
	pi := tdd.PeerInfo{ID: info.ID, Addrs: info.Addrs, Source: "connect"}
	p.List = append(p.List, pi)
	return pi, nil
}

// Env is a tdd API over a real directory on an in-memory datastore, served
// by an httptest server on 127.0.0.1.
type Env struct {
	Server    *httptest.Server
	Handler   *tdd.Handler
	Dir       *directory.Directory
	Self      Identity
	Publisher *Publisher
	// Things is the Resolver: the node's own Things on Publisher.
	Things *own.Things
	Peers  *Peers
	Clock  *Clock
	// URL is the server's base URL.
	URL string
}

// Setup adjusts an Env's dependencies before the handler is built.
type Setup func(*tdd.Deps, *tdd.Config)

// NewEnv starts an Env for the node identity of seed 1; everything is
// closed at the end of the test: the handler first (ending event
// streams), then the server, then the directory.
func NewEnv(t testing.TB, setups ...Setup) *Env {
	t.Helper()
	clock := NewClock()
	self := NewIdentity(1)
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(datastore.NewMapDatastore()), Self: self.ID}, directory.Config{}, directory.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Dir: dir, Self: self, Clock: clock, Peers: &Peers{}}
	env.Publisher = &Publisher{Dir: dir, Self: self, Now: clock.Now}
	things, err := own.New(own.Deps{Directory: dir, Self: self.ID, Publisher: env.Publisher}, own.Config{})
	if err != nil {
		_ = dir.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = things.Close() })
	env.Things = things
	deps := tdd.Deps{Directory: dir, PeerID: self.ID, Resolver: things, Publisher: env.Publisher, Peers: env.Peers}
	var cfg tdd.Config
	for _, s := range setups {
		s(&deps, &cfg)
	}
	h, err := tdd.New(deps, cfg)
	if err != nil {
		_ = dir.Close()
		t.Fatal(err)
	}
	env.Handler = h
	env.Server = httptest.NewServer(h)
	env.URL = env.Server.URL
	t.Cleanup(func() {
		_ = h.Close()
		env.Server.Close()
		_ = dir.Close()
	})
	return env
}

// Learn signs td as id's and puts it into the directory as a learned
// Thing, at sequence number seq.
func (e *Env) Learn(t testing.TB, id Identity, td *lmosproto.TD, seq uint64) directory.Entry {
	t.Helper()
	td = td.Clone()
	td.Seq = seq
	rec, err := lmosproto.SignThing(td, id.Key, e.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dir.Put(rec, nil); err != nil && !errors.Is(err, directory.ErrStale) {
		t.Fatal(err)
	}
	entry, ok := e.Dir.Get(id.ID, td.ID)
	if !ok {
		t.Fatalf("learned thing %q of %s not in the directory", td.ID, id.ID)
	}
	return entry
}
