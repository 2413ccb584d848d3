package federation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestSyncExchange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := newMember(t, nil)
	bob := newMember(t, nil)
	weather, geo, gone := uniqueID(), uniqueID(), uniqueID()
	for _, td := range []struct {
		id   string
		caps []string
	}{{weather, []string{"weather"}}, {geo, []string{"geocode", "weather-maps"}}, {gone, []string{"weather"}}} {
		if _, _, err := alice.Publish(ctx, testTD(t, td.id, 0, td.caps...), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.Remove(ctx, gone); err != nil {
		t.Fatal(err)
	}
	// Bob cached the removed Thing before; the sync must remove it.
	old := sign(t, alice.key, testTD(t, gone, 1, "weather"), time.Now())
	if _, err := bob.dir.Put(old, nil); err != nil {
		t.Fatal(err)
	}
	connect(t, bob, alice)

	n, err := bob.Sync(ctx, alice.id, Filter{Capability: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("filtered sync changed %d records, want 1 (the live weather Thing)", n)
	}
	if _, ok := bob.dir.Get(alice.id, geo); ok {
		t.Error("a capability filter let another Thing through")
	}
	if n, err = bob.Sync(ctx, alice.id, Filter{}); err != nil || n != 2 {
		t.Fatalf("full sync: %d changes, %v; want 2 (geo created, gone deleted)", n, err)
	}
	if e, ok := bob.dir.Latest(alice.id, gone); !ok || !e.Tombstone {
		t.Error("the tombstone did not reach Bob")
	}
	for _, id := range []string{weather, geo} {
		if e, ok := bob.dir.Get(alice.id, id); !ok || e.Own || e.Expires.IsZero() {
			t.Errorf("%s: held %v, own %v, expires %s; want a learned, expiring Thing", id, ok, e.Own, e.Expires)
		}
	}
	if n, err = bob.Sync(ctx, alice.id, Filter{Vendor: "EXAMPLE GMBH", Type: lmosproto.TypeAgent}); err != nil || n != 0 {
		t.Errorf("repeated sync: %d changes, %v; want 0", n, err)
	}
	if _, err := bob.Sync(ctx, bob.id, Filter{}); err == nil {
		t.Error("sync with self succeeded")
	}
}

func TestSyncOnConnect(t *testing.T) {
	ctx := context.Background()
	withSync := func(_ *Deps, c *Config) { c.SyncOnConnect = true }
	alice := newMember(t, withSync)
	bob := newMember(t, withSync)
	a, b := uniqueID(), uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, a, 0, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bob.Publish(ctx, testTD(t, b, 0, "y"), nil); err != nil {
		t.Fatal(err)
	}
	connect(t, alice, bob)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, okA := bob.dir.Get(alice.id, a)
		_, okB := alice.dir.Get(bob.id, b)
		if okA && okB {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after connecting: Bob has Alice's Thing %v, Alice has Bob's %v", okA, okB)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSyncRateLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := newMember(t, nil)
	bob := newMember(t, nil)
	connect(t, bob, alice)
	for i := range SyncBurst {
		if _, err := bob.Sync(ctx, alice.id, Filter{}); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	_, err := bob.Sync(ctx, alice.id, Filter{})
	if err == nil || !strings.Contains(err.Error(), "rate limited") {
		t.Fatalf("request beyond the burst: %v, want a rate-limit refusal", err)
	}
}

// TestSyncOnNewConnection: a sync dials the peer itself and sends its
// request with the protocol negotiation, without waiting for identify; a
// peer that does not speak the sync protocol fails it.
func TestSyncOnNewConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := newMember(t, nil)
	bob := newMember(t, nil)
	id := uniqueID()
	if _, _, err := alice.Publish(ctx, testTD(t, id, 0, "weather"), nil); err != nil {
		t.Fatal(err)
	}
	bob.host.Peerstore().AddAddrs(alice.id, alice.host.Addrs(), time.Minute)
	if n, err := bob.Sync(ctx, alice.id, Filter{Capability: "weather"}); err != nil || n != 1 {
		t.Fatalf("sync on a new connection: %d changes, %v; want 1", n, err)
	}
	if _, ok := bob.dir.Get(alice.id, id); !ok {
		t.Fatal("the Thing did not reach Bob")
	}

	bare, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	bob.host.Peerstore().AddAddrs(bare.ID(), bare.Addrs(), time.Minute)
	if _, err := bob.Sync(ctx, bare.ID(), Filter{}); err == nil {
		t.Fatal("sync with a peer without the sync protocol succeeded")
	}
}

// TestSyncDropsForeignRecords: a peer that answers with records it did not
// sign (a forwarded copy, a forgery, a record outside the filter) gets
// none of them stored.
func TestSyncDropsForeignRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := newMember(t, nil)
	mallory := newMember(t, nil)
	bob := newMember(t, nil)
	alices := sign(t, alice.key, testTD(t, uniqueID(), 1, "weather"), time.Now())
	forged := []byte(strings.Replace(string(sign(t, mallory.key, testTD(t, uniqueID(), 1, "weather"), time.Now()).Raw), `"Test `, `"Evil `, 1))
	offFilter := sign(t, mallory.key, testTD(t, uniqueID(), 1, "geocode"), time.Now())
	good := sign(t, mallory.key, testTD(t, uniqueID(), 1, "weather"), time.Now())
	records := [][]byte{alices.Raw, forged, offFilter.Raw, good.Raw}
	// Mallory answers every request with these records.
	mallory.host.SetStreamHandler(lmosproto.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		if _, err := lmosproto.ReadFrame(s, maxControlFrame); err != nil {
			return
		}
		h, _ := json.Marshal(syncHeader{Count: len(records)})
		_ = lmosproto.WriteFrame(s, h)
		for _, r := range records {
			_ = lmosproto.WriteFrame(s, r)
		}
	})
	connect(t, bob, mallory)
	n, err := bob.Sync(ctx, mallory.id, Filter{Capability: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("stored %d records, want 1 (Mallory's own, matching)", n)
	}
	if bob.dir.Len() != 1 {
		t.Errorf("Bob's directory holds %d Things, want 1", bob.dir.Len())
	}
	if _, ok := bob.dir.Get(mallory.id, good.ThingID); !ok {
		t.Error("Mallory's good record was not stored")
	}
}

func TestParseSyncRequest(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Filter
		err  string
	}{
		{`{"want":"own"}`, Filter{}, ""},
		{`{"want":"own","capability":"weather-forecast"}`, Filter{Capability: "weather-forecast"}, ""},
		{`{"want":"own","type":"lmos:Agent","vendor":"X","later":1}`, Filter{Type: "lmos:Agent", Vendor: "X"}, ""},
		{`{"want":"all"}`, Filter{}, "want"},
		{`{}`, Filter{}, "want"},
		{`[1]`, Filter{}, "sync request"},
		{``, Filter{}, "sync request"},
	} {
		got, err := parseSyncRequest([]byte(c.in))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one naming %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s: %+v, want %+v", c.in, got, c.want)
		}
	}
	// What we send, we accept.
	for _, f := range []Filter{{}, {Capability: "c"}, {Type: "t", Vendor: "v"}} {
		p, err := json.Marshal(toWire(f))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := parseSyncRequest(p); err != nil || got != f {
			t.Errorf("round trip of %+v: %+v, %v", f, got, err)
		}
	}
}

func TestParseSyncHeader(t *testing.T) {
	for _, c := range []struct {
		in  string
		ok  bool
		cnt int
	}{
		{`{"count":0}`, true, 0},
		{`{"count":3,"truncated":true}`, true, 3},
		{`{"count":1025}`, false, 0},
		{`{"count":-1}`, false, 0},
		{`{"error":"rate limited"}`, false, 0},
		{`nope`, false, 0},
	} {
		h, err := parseSyncHeader([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && h.Count != c.cnt) {
			t.Errorf("%s: %+v, %v", c.in, h, err)
		}
	}
}

func FuzzParseSyncRequest(f *testing.F) {
	for _, s := range []string{`{"want":"own"}`, `{"want":"own","capability":"x"}`, `{"want":1}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		flt, err := parseSyncRequest(p)
		if err != nil {
			return
		}
		q, err := json.Marshal(toWire(flt))
		if err != nil {
			t.Fatal(err)
		}
		if again, err := parseSyncRequest(q); err != nil || again != flt {
			t.Fatalf("re-encoded request %s: %+v, %v; want %+v", q, again, err, flt)
		}
	})
}

func FuzzParseSyncHeader(f *testing.F) {
	for _, s := range []string{`{"count":2}`, `{"error":"x"}`, `{"count":99999999999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := parseSyncHeader(p)
		if err == nil && (h.Count < 0 || h.Count > MaxSyncRecords || h.Error != "") {
			t.Fatalf("accepted header %+v", h)
		}
	})
}
