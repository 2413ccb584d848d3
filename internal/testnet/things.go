package testnet

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// UniqueID returns a thing id that no other test uses.
func UniqueID(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("urn:lmos:test:%x", b)
}

// TD returns a valid lmos:Agent TD with the given id, title and capability
// ids, sold by vendor "Testnet GmbH", lmos:seq 0 (Publish picks the seq).
func TD(t testing.TB, id, title string, capabilities ...string) *lmosproto.TD {
	t.Helper()
	caps := make([]map[string]string, len(capabilities))
	for i, c := range capabilities {
		caps[i] = map[string]string{"lmos:id": c, "lmos:version": "1.0.0"}
	}
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeAgent},
		"id":                  id,
		"title":               title,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:metadata":       map[string]any{"lmos:vendor": map[string]string{"lmos:name": "Testnet GmbH"}},
		"lmos:capabilities":   caps,
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatalf("test TD: %v", err)
	}
	return td
}
