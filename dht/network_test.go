package dht

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/lmosnode/lmosnode/internal/loopback"
	"github.com/lmosnode/lmosnode/proto"
)

// permissive accepts every value and prefers the newest put: the validator
// of a malicious or broken peer, used to push records past the local check
// so that the remote peers' validation is what is tested.
type permissive struct{}

func (permissive) Validate(string, []byte) error        { return nil }
func (permissive) Select(string, [][]byte) (int, error) { return 0, nil }

const ringSize = 8

// ring is ringSize honest DHT servers connected in a ring, plus mallory, a
// server that validates nothing, connected to two of them.
type ring struct {
	nodes   []*testNode
	mallory *testNode
}

func newRing(t *testing.T, gater *loopback.Gater) *ring {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("ring of %d up in %s", ringSize+1, time.Since(start).Round(time.Millisecond)) }()
	r := &ring{}
	for range ringSize {
		r.nodes = append(r.nodes, newNode(t, gater, Params{Mode: ModeServer}))
	}
	r.mallory = newNode(t, gater, Params{Mode: ModeServer},
		kaddht.Validator(record.NamespacedValidator{proto.NamespaceThing: permissive{}}))
	for i, n := range r.nodes {
		connect(t, n, r.nodes[(i+1)%ringSize])
	}
	connect(t, r.mallory, r.nodes[0])
	connect(t, r.mallory, r.nodes[ringSize/2])
	all := append([]*testNode{r.mallory}, r.nodes...)
	waitFor(t, "routing tables of the ring", 10*time.Second, func() bool {
		for _, n := range all {
			if n.dht.RoutingTable().Size() < 2 {
				return false
			}
		}
		return true
	})
	return r
}

// holders returns the honest nodes that store value under key.
func (r *ring) holders(t *testing.T, key string, value []byte) []int {
	t.Helper()
	var out []int
	for i, n := range r.nodes {
		if v, ok := n.stored(t)[key]; ok && bytes.Equal(v, value) {
			out = append(out, i)
		}
	}
	return out
}

func TestNetwork(t *testing.T) {
	gater := loopback.NewGater(t)
	r := newRing(t, gater)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("put and get", func(t *testing.T) {
		alice := newPublisher(t)
		for _, thingID := range []string{uniqueThing(t), uniqueThing(t) + "/with/slashes?and=query", uniqueThing(t) + ":天気"} {
			rec := alice.sign(t, thingID, 1, time.Now())
			key := ThingKey(alice.id, thingID)
			if err := r.nodes[0].dht.PutValue(ctx, key, rec.Raw); err != nil {
				t.Fatalf("PutValue: %v", err)
			}
			got, err := r.nodes[ringSize/2+1].dht.GetValue(ctx, key)
			if err != nil {
				t.Fatalf("GetValue %q: %v", thingID, err)
			}
			if !bytes.Equal(got, rec.Raw) {
				t.Fatalf("GetValue %q returned another record", thingID)
			}
			if _, err := (ThingValidator{}).Check(key, got); err != nil {
				t.Fatalf("GetValue returned a record that does not check: %v", err)
			}
			if h := r.holders(t, key, rec.Raw); len(h) < 2 {
				t.Errorf("record stored on %v only", h)
			}
		}
	})

	t.Run("forged records are refused everywhere", func(t *testing.T) {
		alice, bob := newPublisher(t), newPublisher(t)
		thingID := uniqueThing(t)
		good := alice.sign(t, thingID, 1, time.Now())
		forged := map[string]struct {
			key   string
			value []byte
			err   error
		}{
			"forged signature":    {ThingKey(alice.id, thingID), bytes.Replace(good.Raw, []byte(`"WeatherAgent"`), []byte(`"EvilAgent"`), 1), ErrBadRecord},
			"A's record, B's key": {ThingKey(bob.id, thingID), good.Raw, ErrWrongPublisher},
			"expired":             {ThingKey(alice.id, thingID+"-old"), alice.sign(t, thingID+"-old", 1, time.Now().Add(-MaxRecordAge-time.Minute)).Raw, ErrExpired},
		}
		for name, c := range forged {
			// An honest node refuses to put it.
			if err := r.nodes[1].dht.PutValue(ctx, c.key, c.value); !errors.Is(err, c.err) {
				t.Errorf("%s: honest PutValue = %v, want %v", name, err, c.err)
			}
			// Mallory puts it anyway; the peers it sends it to refuse it.
			if err := r.mallory.dht.PutValue(ctx, c.key, c.value); err != nil {
				t.Fatalf("%s: mallory's PutValue: %v", name, err)
			}
			asked := 0
			for i, n := range r.nodes {
				asked += n.putsOf(c.key)
				if _, ok := n.stored(t)[c.key]; ok {
					t.Errorf("%s: node %d stored it", name, i)
				}
			}
			if asked == 0 {
				t.Fatalf("%s: no honest node was asked to store it; the test proves nothing", name)
			}
			// Mallory still serves it, but no honest reader accepts it.
			if _, ok := r.mallory.stored(t)[c.key]; !ok {
				t.Fatalf("%s: mallory did not keep it", name)
			}
			got, err := r.nodes[ringSize-1].dht.GetValue(ctx, c.key)
			if !errors.Is(err, routing.ErrNotFound) {
				t.Errorf("%s: GetValue = %d bytes, %v; want routing.ErrNotFound", name, len(got), err)
			}
		}
	})

	t.Run("a replayed lower seq does not replace the higher", func(t *testing.T) {
		alice := newPublisher(t)
		thingID := uniqueThing(t)
		key := ThingKey(alice.id, thingID)
		now := time.Now()
		seq1 := alice.sign(t, thingID, 1, now.Add(-time.Hour))
		seq2 := alice.sign(t, thingID, 2, now.Add(-time.Minute))
		seq1Late := alice.sign(t, thingID, 1, now) // re-signed later: seq still rules

		if err := r.nodes[2].dht.PutValue(ctx, key, seq2.Raw); err != nil {
			t.Fatal(err)
		}
		holders := r.holders(t, key, seq2.Raw)
		if len(holders) < 2 {
			t.Fatalf("seq 2 stored on %v only", holders)
		}
		// The publisher's own node refuses locally.
		if err := r.nodes[2].dht.PutValue(ctx, key, seq1.Raw); err == nil {
			t.Error("PutValue of seq 1 over a local seq 2 succeeded")
		}
		// Mallory replays both older versions to the closest peers.
		for _, old := range [][]byte{seq1.Raw, seq1Late.Raw} {
			before := 0
			for _, i := range holders {
				before += r.nodes[i].putsOf(key)
			}
			if err := r.mallory.dht.PutValue(ctx, key, old); err != nil {
				t.Fatal(err)
			}
			after := 0
			for _, i := range holders {
				after += r.nodes[i].putsOf(key)
			}
			if after == before {
				t.Fatal("mallory's replay reached no holder of seq 2; the test proves nothing")
			}
		}
		if still := r.holders(t, key, seq2.Raw); len(still) != len(holders) {
			t.Errorf("seq 2 was on %v, after the replay on %v", holders, still)
		}
		for _, reader := range []int{5, 7} {
			got, err := r.nodes[reader].dht.GetValue(ctx, key)
			if err != nil || !bytes.Equal(got, seq2.Raw) {
				t.Errorf("node %d: GetValue = %d bytes, %v; want seq 2", reader, len(got), err)
			}
		}

		// A tombstone at seq 3 replaces seq 2 and is replaced by nothing older.
		tomb := alice.tombstone(t, thingID, 3, time.Now())
		if err := r.nodes[6].dht.PutValue(ctx, key, tomb.Raw); err != nil {
			t.Fatal(err)
		}
		if err := r.mallory.dht.PutValue(ctx, key, seq2.Raw); err != nil {
			t.Fatal(err)
		}
		got, err := r.nodes[3].dht.GetValue(ctx, key)
		if err != nil || !bytes.Equal(got, tomb.Raw) {
			t.Errorf("after the tombstone: GetValue = %d bytes, %v; want the tombstone", len(got), err)
		}
	})

	t.Run("providers", func(t *testing.T) {
		capability := CapabilityCID(uniqueThing(t)) // a capability nobody else provides
		providers := []int{1, 3, 5}
		want := map[peer.ID]bool{}
		for _, i := range providers {
			if err := r.nodes[i].dht.Provide(ctx, capability, true); err != nil {
				t.Fatalf("node %d: Provide: %v", i, err)
			}
			want[r.nodes[i].host.ID()] = true
		}
		found, err := r.nodes[6].dht.FindProviders(ctx, capability)
		if err != nil {
			t.Fatal(err)
		}
		got := map[peer.ID]bool{}
		for _, ai := range found {
			got[ai.ID] = true
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("FindProviders found %v, want %v", got, want)
		}
		if other, err := r.nodes[6].dht.FindProviders(ctx, CapabilityCID(uniqueThing(t))); err != nil || len(other) != 0 {
			t.Errorf("FindProviders of an unprovided capability: %v, %v", other, err)
		}
		if !capability.Equals(cid.NewCidV1(cid.Raw, capability.Hash())) {
			t.Error("provider key is not a CIDv1 raw")
		}
	})
}
