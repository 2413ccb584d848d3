package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/tdd"
)

// Liveness of the test: short, so the test does not wait minutes.
const (
	testOfflineAfter = 3 * time.Second
	testOfflineTTL   = 6 * time.Second
)

// TestLiveness: B learns A's Thing and counts it online while A lives (A's
// presence beats date B's last sighting after the record's proof); once A
// is closed, B marks the Thing offline — in its directory, its listing
// (LMOS-Online, online=true) and the Enriched TD — and then drops it.
func TestLiveness(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net := testnet.New(t, 2, testnet.Options{
		Configure: func(_ int, cfg *config.Config) {
			cfg.Liveness = config.LivenessConfig{OfflineAfter: config.Duration(testOfflineAfter), OfflineTTL: config.Duration(testOfflineTTL)}
		},
		NodeOptions: func(int) []node.Option { return []node.Option{node.WithGossipHeartbeat(200 * time.Millisecond)} },
	})
	net.Link(1, 0)
	a, b := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	e, _, err := a.Federation().Publish(ctx, testnet.TD(t, id, "Alive", "alive"), nil)
	if err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "B has A's Thing", waitLong, testnet.All([]*node.Node{b}, has(a.PeerID(), id, 1, false)))
	testnet.WaitFor(t, "a presence beat of A reaches B", waitLong, func() (bool, string) {
		got, _ := b.Directory().Get(a.PeerID(), id)
		return got.Online && got.LastSeen.After(e.Signed), fmt.Sprintf("online %v, last seen %s, signed %s", got.Online, got.LastSeen, e.Signed)
	})
	api := "http://" + b.APIAddr()
	if on := listingOnline(t, api, ""); on != "true" {
		t.Fatalf("B's listing while A lives: %s %q", tdd.HeaderOnline, on)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	testnet.WaitFor(t, "B marks A's Thing offline", waitLong, func() (bool, string) {
		got, ok := b.Directory().Get(a.PeerID(), id)
		return ok && !got.Online, fmt.Sprintf("held %v, online %v", ok, got.Online)
	})
	offline := time.Since(closed)
	got, _ := b.Directory().Get(a.PeerID(), id)
	if time.Since(got.LastSeen) < testOfflineAfter {
		t.Errorf("offline %s after its last sighting, before offlineAfter (%s)", time.Since(got.LastSeen), testOfflineAfter)
	}
	if on := listingOnline(t, api, ""); on != "false" {
		t.Errorf("B's listing with A gone: %s %q", tdd.HeaderOnline, on)
	}
	if on := listingOnline(t, api, "?online=true"); on != "" {
		t.Errorf("B's listing online=true with A gone: %s %q, want nothing listed", tdd.HeaderOnline, on)
	}
	reg := enrichedRegistration(t, api, id)
	if reg.Online || reg.LastSeen == nil {
		t.Errorf("B's enriched registration with A gone: %+v", reg)
	}

	testnet.WaitFor(t, "B drops A's Thing", waitLong, func() (bool, string) {
		_, ok := b.Directory().Get(a.PeerID(), id)
		return !ok, "still held"
	})
	t.Logf("A closed → offline on B after %s (offlineAfter %s), dropped after %s (offlineTTL %s)",
		offline.Round(100*time.Millisecond), testOfflineAfter, time.Since(closed).Round(100*time.Millisecond), testOfflineTTL)
}

// listingOnline returns the LMOS-Online header of GET /things+query on api.
func listingOnline(t *testing.T, api, query string) string {
	t.Helper()
	resp, err := http.Get(api + "/things" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /things%s: %s", query, resp.Status)
	}
	return resp.Header.Get(tdd.HeaderOnline)
}

// enrichedRegistration returns the registration of the Enriched TD id on
// api.
func enrichedRegistration(t *testing.T, api, id string) tdd.Registration {
	t.Helper()
	resp, err := http.Get(api + "/things/" + id + "?enriched=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Registration tdd.Registration `json:"registration"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET enriched %s: %s %v", id, resp.Status, err)
	}
	return doc.Registration
}
