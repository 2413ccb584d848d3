package directory

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestParsePublisher: a publisher is named by its peer ID, its did:key or
// a short form that ends exactly one publisher held.
func TestParsePublisher(t *testing.T) {
	self, a, b := newPublisher(t, 1), newPublisher(t, 2), newPublisher(t, 3)
	d := open(t, memStore(), self.id, newClock(), Config{})
	mustPut(t, d, a.sign(t, thingSpec{id: "urn:a", seq: 1}, t0), nil, Created)
	mustPut(t, d, b.sign(t, thingSpec{id: "urn:b", seq: 1}, t0), nil, Created)
	did := lmosproto.DIDKey(a.key.Public().(ed25519.PublicKey))
	s := a.id.String()
	for _, in := range []string{s, did, lmosproto.ShortPublisher(a.id), s[len(s)-6:], "..." + s[len(s)-10:]} {
		if got, err := d.ParsePublisher(in); err != nil || got != a.id {
			t.Errorf("ParsePublisher(%q) = %s, %v; want %s", in, got, err, a.id)
		}
	}
	for in, want := range map[string]error{"…zzzzzzzz": ErrUnknownPublisher, "…" + s[len(s)-5:]: nil, "…0OIl00": nil} {
		_, err := d.ParsePublisher(in)
		if err == nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("ParsePublisher(%q): %v, want an error (%v)", in, err, want)
		}
	}
	// DropPublisher removes b's records only, never the node's own.
	if got, err := d.DropPublisher(b.id); err != nil || got != 1 {
		t.Fatalf("DropPublisher: %d, %v", got, err)
	}
	if len(d.Lookup("urn:b")) != 0 || len(d.Lookup("urn:a")) != 1 {
		t.Errorf("after DropPublisher(b): urn:b %v, urn:a %v", d.Lookup("urn:b"), d.Lookup("urn:a"))
	}
	if _, err := d.ParsePublisher(lmosproto.ShortPublisher(b.id)); !errors.Is(err, ErrUnknownPublisher) {
		t.Errorf("short form of a dropped publisher: %v", err)
	}
	if _, err := d.DropPublisher(self.id); err == nil || !strings.Contains(err.Error(), "own") {
		t.Errorf("DropPublisher(self): %v", err)
	}
}
