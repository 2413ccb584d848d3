package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
	ma "github.com/multiformats/go-multiaddr"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// gatedDHT is a DHT whose provider lookups yield providers, each once
// ready says so (or after ten seconds), and then go on without finding
// more until they are stopped: a lookup on a large network whose provider
// records name providers the node has never met. It stores nothing.
type gatedDHT struct {
	providers []peer.AddrInfo
	ready     func(peer.ID) bool
	lookups   atomic.Int32 // provider lookups started
}

func (g *gatedDHT) PutValue(context.Context, string, []byte, ...routing.Option) error {
	return routing.ErrNotSupported
}

func (g *gatedDHT) GetValue(context.Context, string, ...routing.Option) ([]byte, error) {
	return nil, routing.ErrNotFound
}

func (g *gatedDHT) FindPeer(context.Context, peer.ID) (peer.AddrInfo, error) {
	return peer.AddrInfo{}, routing.ErrNotFound
}

func (g *gatedDHT) Provide(context.Context, cid.Cid, bool) error { return nil }

func (g *gatedDHT) FindProvidersAsync(ctx context.Context, _ cid.Cid, _ int) <-chan peer.AddrInfo {
	g.lookups.Add(1)
	out := make(chan peer.AddrInfo)
	go func() {
		defer close(out)
		for _, ai := range g.providers {
			for give := time.Now().Add(10 * time.Second); g.ready != nil && !g.ready(ai.ID) && time.Now().Before(give); {
				select {
				case <-ctx.Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			select {
			case out <- ai:
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done()
	}()
	return out
}

// dialLog records the peers a host connected to.
type dialLog struct {
	mu    sync.Mutex
	peers []peer.ID
}

func (l *dialLog) Connected(_ network.Network, c network.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.peers = append(l.peers, c.RemotePeer())
}
func (l *dialLog) Disconnected(network.Network, network.Conn) {}
func (l *dialLog) Listen(network.Network, ma.Multiaddr)       {}
func (l *dialLog) ListenClose(network.Network, ma.Multiaddr)  {}

func (l *dialLog) saw(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.peers, p)
}

// waitIdentified waits until identify has told a which protocols b
// speaks.
func waitIdentified(t *testing.T, a, b *member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if ps, err := a.host.Peerstore().GetProtocols(b.id); err == nil && slices.Contains(ps, lmosproto.ProtocolSync) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("identify never reported the peer's protocols")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestColdLookupFromHolder: a cold node gets a provider's verified TD from
// a peer it is connected to that holds it, and does not connect to the
// provider the DHT names.
func TestColdLookupFromHolder(t *testing.T) {
	alice := newMember(t, nil)
	holder := newMember(t, nil)
	connect(t, holder, alice)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, id, 0, "harbour-pilots"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Sync(ctx, alice.id, Filter{}); err != nil {
		t.Fatal(err)
	}
	var bob *member
	dht := &gatedDHT{
		providers: []peer.AddrInfo{{ID: alice.id, Addrs: alice.host.Addrs()}},
		// The provider record arrives once the holder's answer is in.
		ready: func(peer.ID) bool { _, ok := bob.dir.Latest(alice.id, id); return ok },
	}
	bob = newMember(t, func(d *Deps, _ *Config) { d.DHT = dht })
	dials := &dialLog{}
	bob.host.Network().Notify(dials)
	connect(t, bob, holder)
	waitIdentified(t, bob, holder)

	found, err := bob.FindCapability(ctx, "harbour-pilots")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Publisher != alice.id || found[0].ThingID != id {
		t.Fatalf("found %+v, want alice's %s", found, id)
	}
	if dials.saw(alice.id) || len(bob.host.Network().ConnsToPeer(alice.id)) > 0 {
		t.Error("the cold node connected to the provider whose TD a connected peer had sent")
	}
}

// TestColdLookupOldHolder: a connected peer that does not speak the find
// protocol (an older node) is not asked; the provider is, and its TD
// found. A find asked of it anyway fails instead of waiting.
func TestColdLookupOldHolder(t *testing.T) {
	alice := newMember(t, nil)
	old := newMember(t, nil)
	old.host.RemoveStreamHandler(lmosproto.ProtocolFind)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, id, 0, "ferry-times"), nil); err != nil {
		t.Fatal(err)
	}
	bob := newMember(t, func(d *Deps, _ *Config) {
		d.DHT = &gatedDHT{providers: []peer.AddrInfo{{ID: alice.id, Addrs: alice.host.Addrs()}}}
	})
	connect(t, bob, old)
	waitIdentified(t, bob, old)
	if hs := bob.holders(); len(hs) != 0 {
		t.Fatalf("holders %v: an old node was taken for one", hs)
	}
	found, err := bob.FindCapability(ctx, "ferry-times")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Publisher != alice.id || found[0].ThingID != id {
		t.Fatalf("found %+v, want alice's %s", found, id)
	}
	if _, err := bob.findFrom(ctx, old.id, "ferry-times"); err == nil {
		t.Error("a find asked of a peer without the protocol succeeded")
	}
}

// serveRaw makes m answer every find request with count, then these records, as they are.
func serveRaw(t *testing.T, m *member, count int, recs ...[]byte) {
	t.Helper()
	m.host.SetStreamHandler(lmosproto.ProtocolFind, func(s network.Stream) {
		defer s.Close()
		if _, err := lmosproto.ReadFrame(s, maxControlFrame); err != nil {
			_ = s.Reset()
			return
		}
		if err := writeHeader(s, syncHeader{Count: count}); err != nil {
			return
		}
		for _, raw := range recs {
			if err := lmosproto.WriteFrame(s, raw); err != nil {
				return
			}
		}
	})
}

// TestFindRefusesBadRecords: what a holder serves goes through the
// intake: a tampered record, one whose proof names a publisher that did
// not sign it, a group-scoped one, a tombstone and one without the
// capability are dropped; the good one is kept.
func TestFindRefusesBadRecords(t *testing.T) {
	alice := newMember(t, nil)
	mallory := newMember(t, nil)
	bob := newMember(t, nil)
	now := time.Now()
	const capability = "pilot-boarding"

	good := sign(t, alice.key, testTD(t, uniqueID(), 0, capability), now)
	tampered := bytes.Replace(sign(t, alice.key, testTD(t, uniqueID(), 0, capability), now).Raw, []byte(`"Test `), []byte(`"Evil `), 1)
	if !bytes.Contains(tampered, []byte(`"Evil `)) {
		t.Fatal("tampering failed")
	}
	vm := func(m *member) []byte {
		return []byte(lmosproto.DIDKeyVerificationMethod(m.key.Public().(ed25519.PublicKey)))
	}
	forged := bytes.ReplaceAll(sign(t, mallory.key, testTD(t, uniqueID(), 0, capability), now).Raw, vm(mallory), vm(alice))
	if !bytes.Contains(forged, vm(alice)) {
		t.Fatal("forging failed")
	}
	scoped := sign(t, alice.key, scopedCap(t, capability), now)
	other := sign(t, alice.key, testTD(t, uniqueID(), 0, "something-else"), now)
	tomb, err := lmosproto.SignTombstone(uniqueID(), 1, alice.key, now)
	if err != nil {
		t.Fatal(err)
	}
	serveRaw(t, mallory, 6, tampered, forged, scoped.Raw, other.Raw, tomb.Raw, good.Raw)
	connect(t, bob, mallory)
	waitIdentified(t, bob, mallory)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, err := bob.findFrom(ctx, mallory.id, capability)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ThingID != good.ThingID || recs[0].Publisher() != alice.id {
		t.Fatalf("kept %d records, want only the good one", len(recs))
	}
	a := bob.askHolders(ctx, []peer.ID{mallory.id}, capability)
	if a.learned != 1 || !a.publishers[alice.id] || len(a.publishers) != 1 {
		t.Fatalf("askHolders = %+v, want alice's one record", a)
	}
	if _, ok := bob.dir.Latest(alice.id, scoped.ThingID); ok {
		t.Error("a group-scoped record from a third party was stored")
	}

	// A header announcing more records than an answer may carry.
	serveRaw(t, mallory, MaxFindRecords+1)
	if _, err := bob.findFrom(ctx, mallory.id, capability); err == nil || !strings.Contains(err.Error(), "count") {
		t.Errorf("an answer of %d records: %v, want refused", MaxFindRecords+1, err)
	}
}

// TestFindServesPublicLive: a holder answers with the public, live
// records of the capability it holds, own and learned, byte for byte as
// signed; not group-scoped ones, not removed Things, not other
// capabilities.
func TestFindServesPublicLive(t *testing.T) {
	alice, holder, bob, ctx := threeMembers(t)
	now := time.Now()
	const capability = "lock-keeping"

	learned := sign(t, alice.key, testTD(t, uniqueID(), 0, capability), now)
	scoped := sign(t, alice.key, scopedCap(t, capability), now)
	for _, rec := range []*lmosproto.Record{learned, scoped, sign(t, alice.key, testTD(t, uniqueID(), 0, "other"), now)} {
		if _, err := holder.dir.Put(rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	own, _, err := holder.Publish(ctx, testTD(t, uniqueID(), 0, capability), nil)
	if err != nil {
		t.Fatal(err)
	}
	removed := uniqueID()
	if _, _, err := holder.Publish(ctx, testTD(t, removed, 0, capability), nil); err != nil {
		t.Fatal(err)
	}
	if err := holder.Remove(ctx, removed); err != nil {
		t.Fatal(err)
	}
	connect(t, bob, holder)
	waitIdentified(t, bob, holder)

	recs, err := bob.findFrom(ctx, holder.id, capability)
	if err != nil {
		t.Fatal(err)
	}
	ownRaw, err := own.Raw()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ThingID)
		if r.ThingID == learned.ThingID && !bytes.Equal(r.Raw, learned.Raw) || r.ThingID == own.ThingID && !bytes.Equal(r.Raw, ownRaw) {
			t.Errorf("%s: not the bytes its publisher signed", r.ThingID)
		}
	}
	slices.Sort(got)
	want := []string{learned.ThingID, own.ThingID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("served %v, want %v (the learned and the own public Thing)", got, want)
	}

	// The scoped record names the capability too, so it is the
	// visibility rule that left it out.
	if !slices.ContainsFunc(scoped.TD.Capabilities, func(c lmosproto.Capability) bool { return c.ID == capability }) {
		t.Fatal("test setup: the scoped Thing does not offer the capability")
	}
}

// TestFindLimits: a capability id over MaxFindCapability is refused, an
// answer carries at most MaxFindRecords records (saying it left some out),
// and a peer asking too often is refused (the sync server's rate limit).
func TestFindLimits(t *testing.T) {
	alice, holder, bob, ctx := threeMembers(t)
	now := time.Now()
	const capability = "canal-tolls"
	for range MaxFindRecords + 3 {
		if _, err := holder.dir.Put(sign(t, alice.key, testTD(t, uniqueID(), 0, capability), now), nil); err != nil {
			t.Fatal(err)
		}
	}
	connect(t, bob, holder)
	waitIdentified(t, bob, holder)

	recs, truncated, err := holder.publicRecords(capability)
	if err != nil || len(recs) != MaxFindRecords || !truncated {
		t.Fatalf("publicRecords: %d records, truncated %v (%v); want %d, truncated", len(recs), truncated, err, MaxFindRecords)
	}
	got, err := bob.findFrom(ctx, holder.id, capability)
	if err != nil || len(got) != MaxFindRecords {
		t.Fatalf("find: %d records (%v), want %d", len(got), err, MaxFindRecords)
	}
	if _, err := bob.findFrom(ctx, holder.id, strings.Repeat("x", MaxFindCapability+1)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a capability of %d bytes: %v, want refused", MaxFindCapability+1, err)
	}
	// One request was answered; the burst allows SyncBurst in all.
	for i := 1; i < SyncBurst; i++ {
		if _, err := bob.findFrom(ctx, holder.id, "nothing"); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	if _, err := bob.findFrom(ctx, holder.id, capability); err == nil || !strings.Contains(err.Error(), "rate limited") {
		t.Errorf("request %d: %v, want rate limited", SyncBurst+1, err)
	}
}

// threeMembers starts a publisher, a holder and a cold node, and a
// context for the test.
func threeMembers(t *testing.T) (alice, holder, bob *member, ctx context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return newMember(t, nil), newMember(t, nil), newMember(t, nil), ctx
}

// scopedCap is a TD of a Thing restricted to group g-alpha that offers
// capability.
func scopedCap(t *testing.T, capability string) *lmosproto.TD {
	td := testTD(t, uniqueID(), 0, capability)
	td.Groups = []string{"g-alpha"}
	return td
}
