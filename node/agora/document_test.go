package agora

import (
	"encoding/json"
	"strings"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func testTD(t *testing.T, input string) *lmosproto.TD {
	t.Helper()
	td, err := lmosproto.ParseTD([]byte(`{"@context":["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1/td/core#"}],
		"@type":["lmos:Agent"],"id":"urn:test:agent","title":"Weather","description":"Forecasts.",
		"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",
		"actions":{"forecast":{"description":"A forecast for a city.","input":` + input + `,"output":{"type":"string"},"forms":[{"href":"https://x.invalid/f"}]},
		           "ask":{"input":{"type":"string"},"forms":[{"href":"https://x.invalid/a"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// TestProtocolsDeterministic: the documents depend on the TD's content,
// not on how its schemas are spelled, and are ordered by action.
func TestProtocolsDeterministic(t *testing.T) {
	a := Protocols(testTD(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	b := Protocols(testTD(t, `{ "required": [ "city" ], "properties": { "city": { "type": "string" } }, "type": "object" }`))
	if len(a) != 2 || a[0].Action != "ask" || a[1].Action != "forecast" {
		t.Fatalf("protocols: %+v", a)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same TD spelled differently renders differently:\n%s\n%s", a[i].Text, b[i].Text)
		}
		if len(a[i].Hash) != 40 || a[i].Hash != Hash(a[i].Text) {
			t.Fatalf("hash %q", a[i].Hash)
		}
	}
	if a[0].Hash == a[1].Hash {
		t.Fatal("two actions, one hash")
	}
	c := Protocols(testTD(t, `{"type":"object","properties":{"city":{"type":"string"}}}`))
	if c[1].Hash == a[1].Hash || c[0].Hash != a[0].Hash {
		t.Fatal("a changed schema must change its action's hash and only that")
	}
	doc := a[1].Text
	meta, spec, ok := strings.Cut(doc, "\n---\n")
	if !ok || !strings.Contains(meta, `name: "Weather: forecast"`) || !strings.Contains(meta, `description: "A forecast for a city."`) ||
		!strings.Contains(meta, "multiround: true") || !strings.Contains(spec, `{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`) {
		t.Fatalf("document:\n%s", doc)
	}
}

// TestHash is §8.2's SHA1 of the whole text.
func TestHash(t *testing.T) {
	if h := Hash("name: x\ndescription: y\nmultiround: false\n---\nz\n"); h != "19ffa3cc7a8f4b88f237758a1cdc41338cfca366" {
		t.Fatal(h)
	}
	if Hash("") != "da39a3ee5e6b4b0d3255bfef95601890afd80709" {
		t.Fatal("SHA1 of the empty text")
	}
}

func TestBodyText(t *testing.T) {
	for body, want := range map[string]string{`"hi"`: "hi", `{"a":1}`: `{"a":1}`} {
		if got, err := bodyText(json.RawMessage(body)); err != nil || got != want {
			t.Errorf("bodyText(%s) = %q, %v", body, got, err)
		}
	}
	if _, err := bodyText(nil); err == nil {
		t.Error("a missing body is an error")
	}
}

// TestFreeTextAction: natural language goes to an agent's only action;
// an agent of several is called by protocol.
func TestFreeTextAction(t *testing.T) {
	td := testTD(t, `{"type":"string"}`)
	if _, err := FreeTextAction(td, "/agora/x/y/wellknown"); err == nil || !strings.Contains(err.Error(), "protocolHash") {
		t.Fatalf("two actions: %v", err)
	}
	delete(td.Actions, "forecast")
	if a, err := FreeTextAction(td, ""); err != nil || a != "ask" {
		t.Fatalf("one action: %q %v", a, err)
	}
}
