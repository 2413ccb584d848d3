package rotation

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

type key struct {
	priv ed25519.PrivateKey
	id   peer.ID
}

func newKey(t *testing.T) key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := lmosproto.PeerIDFromEd25519(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return key{priv, id}
}

func rotation(t *testing.T, from, to key, at time.Time) *lmosproto.KeyRecord {
	t.Helper()
	rec, err := lmosproto.SignRotation(from.priv, to.priv, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	store := dssync.MutexWrap(ds.NewMapDatastore())
	r, err := New(Deps{Datastore: store, Self: newKey(t).id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var heard []*lmosproto.KeyRecord
	r.OnRecord(func(rec *lmosproto.KeyRecord) { heard = append(heard, rec) })
	a, b, c, x := newKey(t), newKey(t), newKey(t), newKey(t)
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

	// A→X made later than A→B: whichever comes first, A→B is kept.
	if _, added, err := r.Add(ctx, rotation(t, a, x, t0.Add(time.Hour)).Raw); err != nil || !added {
		t.Fatalf("add A→X: %v %v", added, err)
	}
	if _, added, err := r.Add(ctx, rotation(t, a, b, t0).Raw); err != nil || !added {
		t.Fatalf("add A→B: %v %v", added, err)
	}
	if _, added, _ := r.Add(ctx, rotation(t, a, x, t0.Add(time.Hour)).Raw); added {
		t.Fatal("the later rotation replaced the earlier")
	}
	if _, added, err := r.Add(ctx, rotation(t, b, c, t0.Add(2*time.Hour)).Raw); err != nil || !added {
		t.Fatalf("add B→C: %v %v", added, err)
	}
	if got, ok := r.Successor(a.id); !ok || got != c.id {
		t.Fatalf("successor of A: %s %v, want C", got, ok)
	}
	if !errors.Is(r.Retired(a.id), ErrRotated) || r.Retired(c.id) != nil {
		t.Fatalf("retired: A %v, C %v", r.Retired(a.id), r.Retired(c.id))
	}
	if r.RetiredAt(b.id, t0.Add(time.Hour)) != nil || !errors.Is(r.RetiredAt(b.id, t0.Add(2*time.Hour)), ErrRotated) {
		t.Fatal("RetiredAt counts only what B signed from its rotation on")
	}
	// C revokes A (its predecessor's predecessor cannot: the revocation
	// by a successor names the rotation it follows, A→B, so B signs).
	rev, err := lmosproto.SignRevocation(b.priv, rotation(t, a, b, t0), "leaked", t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, added, err := r.Add(ctx, rev.Raw); err != nil || !added {
		t.Fatalf("add the revocation: %v %v", added, err)
	}
	if !errors.Is(r.Retired(a.id), ErrRevoked) {
		t.Fatalf("A after the revocation: %v", r.Retired(a.id))
	}
	// X rotates to Y, then X is revoked by itself: X has no successor any
	// more (whoever signed the rotation held the key the revocation says
	// leaked).
	y := newKey(t)
	if _, _, err := r.Add(ctx, rotation(t, x, y, t0).Raw); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Successor(x.id); !ok || got != y.id {
		t.Fatalf("successor of X before its revocation: %s %v", got, ok)
	}
	selfRev, err := lmosproto.SignRevocation(x.priv, nil, "", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Add(ctx, selfRev.Raw); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Successor(x.id); ok {
		t.Fatalf("a key revoked by itself has the successor %s", got)
	}
	if len(heard) != 6 {
		t.Fatalf("OnRecord heard %d records, want 6 (A→X, A→B, B→C, A's revocation, X→Y, X's)", len(heard))
	}

	// The records outlive the registry.
	again, err := New(Deps{Datastore: store, Self: c.id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := again.Successor(a.id); got != c.id || !errors.Is(again.Retired(a.id), ErrRevoked) {
		t.Fatalf("reloaded: successor %s, %v", got, again.Retired(a.id))
	}
	if _, _, err := r.Add(ctx, []byte(`{"type":"lmos:KeyRotation"}`)); !errors.Is(err, lmosproto.ErrBadKeyRecord) {
		t.Fatalf("a malformed record: %v", err)
	}
}

// TestSync: a registry that was not there when a key was revoked learns
// it from a peer over Protocol.
func TestSync(t *testing.T) {
	ctx := context.Background()
	var regs [2]*Registry
	for i := range regs {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		r, err := New(Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: h.ID()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(h, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		regs[i] = r
	}
	k := newKey(t)
	rev, err := lmosproto.SignRevocation(k.priv, nil, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := regs[0].Add(ctx, rev.Raw); err != nil {
		t.Fatal(err)
	}
	h0 := regs[0].host
	regs[1].host.Peerstore().AddAddrs(h0.ID(), h0.Addrs(), time.Minute)
	// The explicit sync, or the one identify starts on the connection it
	// opens, brings the record.
	if _, err := regs[1].Sync(ctx, h0.ID()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !errors.Is(regs[1].Retired(k.id), ErrRevoked) {
		t.Fatal("the revocation did not arrive")
	}
}
