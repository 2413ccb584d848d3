package dht

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// publisher is a signing identity in tests: an Ed25519 key and its peer ID.
type publisher struct {
	key ed25519.PrivateKey
	id  peer.ID
}

func newPublisher(t testing.TB) publisher {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := proto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return publisher{key: key, id: id}
}

// testTD is a small valid lmos:Agent TD.
func testTD(t testing.TB, thingID string, seq uint64) *proto.TD {
	t.Helper()
	doc := map[string]any{
		"@context":            json.RawMessage(proto.LMOSContext()),
		"@type":               []string{proto.TypeAgent},
		"id":                  thingID,
		"title":               "WeatherAgent",
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:metadata":       map[string]any{"lmos:vendor": map[string]string{"lmos:name": "Example Weather GmbH"}},
		"lmos:capabilities": []map[string]string{
			{"lmos:id": "weather-forecast", "lmos:version": "1.2.0"},
			{"lmos:id": "weather-alerts"},
		},
		"lmos:seq": seq,
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := proto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// sign signs the TD thingID at seq as p, created at the given time.
func (p publisher) sign(t testing.TB, thingID string, seq uint64, created time.Time) *proto.Record {
	t.Helper()
	rec, err := proto.SignThing(testTD(t, thingID, seq), p.key, created)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (p publisher) tombstone(t testing.TB, thingID string, seq uint64, created time.Time) *proto.Record {
	t.Helper()
	rec, err := proto.SignTombstone(thingID, seq, p.key, created)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// uniqueThing returns a thing id no other test uses.
func uniqueThing(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("urn:lmos:test:%x", b)
}
