package groups

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// t0 is the base time of the tests' operations.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// actor is a peer with its key.
type actor struct {
	key ed25519.PrivateKey
	id  peer.ID
}

// newActor derives a deterministic key from name.
func newActor(t testing.TB, name string) actor {
	t.Helper()
	seed := sha256.Sum256([]byte("groups test " + name))
	key := ed25519.NewKeyFromSeed(seed[:])
	id, err := proto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return actor{key, id}
}

// newGroup founds a group by a.
func newGroup(t testing.TB, a actor, name string) *Log {
	t.Helper()
	g, err := Genesis(a.key, name, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(g)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sign makes an op on l's heads at t0+sec seconds.
func sign(t testing.TB, l *Log, a actor, d Draft, sec int) *Op {
	t.Helper()
	op, err := l.Sign(a.key, d, t0.Add(time.Duration(sec)*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// mustAdd signs d and adds it, failing unless it is accepted.
func mustAdd(t testing.TB, l *Log, a actor, d Draft, sec int) *Op {
	t.Helper()
	op := sign(t, l, a, d, sec)
	added, err := l.Add(op)
	if err != nil {
		t.Fatalf("add %s by %s: %v", d.Kind, a.id, err)
	}
	if len(added) == 0 || added[0] != op {
		t.Fatalf("add %s: not added (%v)", d.Kind, added)
	}
	return op
}

// clone copies l through its record form.
func clone(t testing.TB, l *Log) *Log {
	t.Helper()
	c, err := ParseLog(l.ID(), l.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
