package a2abridge

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/santhosh-tekuri/jsonschema/v6"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestParts03: every part survives the way to its 0.3 form, through
// a2a-go's decoder, and back; a value that is not an object travels
// wrapped as {"value": …} with metadata data_part_compat.
func TestParts03(t *testing.T) {
	parts := []Part{
		TextPart("hi"),
		{Data: json.RawMessage(`{"a":[1,"b"]}`)},
		{Data: json.RawMessage(`42`)},
		{Data: json.RawMessage(`[1,2]`), Metadata: json.RawMessage(`{"k":"v"}`)},
		{URL: "https://x.invalid/f.pdf", MediaType: "application/pdf", Filename: "f.pdf"},
		{Raw: []byte("bytes"), MediaType: "application/octet-stream"},
	}
	b, err := json.Marshal(parts03(parts))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"text","text":"hi"},{"kind":"data","data":{"a":[1,"b"]}},{"kind":"data","data":{"value":42},"metadata":{"data_part_compat":true}},` +
		`{"kind":"data","data":{"value":[1,2]},"metadata":{"data_part_compat":true,"k":"v"}},` +
		`{"kind":"file","file":{"mimeType":"application/pdf","name":"f.pdf","uri":"https://x.invalid/f.pdf"}},` +
		`{"kind":"file","file":{"mimeType":"application/octet-stream","bytes":"Ynl0ZXM="}}]`
	if string(b) != want {
		t.Fatalf("0.3 parts:\n got %s\nwant %s", b, want)
	}
	var back a2a.ContentParts
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got := parts10(back)
	if g, w := mustRaw(got), mustRaw(parts); string(g) != string(w) {
		t.Fatalf("back:\n got %s\nwant %s", g, w)
	}
}

// TestStates03: the task states of both generations map one to one.
func TestStates03(t *testing.T) {
	for s10, s03 := range map[string]a2a.TaskState{StateSubmitted: a2a.TaskStateSubmitted, StateWorking: a2a.TaskStateWorking,
		StateCompleted: a2a.TaskStateCompleted, StateFailed: a2a.TaskStateFailed, StateCanceled: a2a.TaskStateCanceled,
		StateInputRequired: a2a.TaskStateInputRequired, StateRejected: a2a.TaskStateRejected, StateAuthRequired: a2a.TaskStateAuthRequired} {
		if state03(s10) != s03 || state10(s03) != s10 {
			t.Errorf("%s <-> %s: %s, %s", s10, s03, state03(s10), state10(s03))
		}
	}
	for state, final := range map[string]bool{StateWorking: false, StateCompleted: true, StateInputRequired: true} {
		ev := event03(StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: state}}})
		if u := ev.(*a2a.TaskStatusUpdateEvent); u.Final != final {
			t.Errorf("status-update %s: final %v", state, u.Final)
		}
	}
}

// TestDualCard: a dual card is read by a 0.3 client (a2a-go's card type)
// and a 1.0 one; both of its signatures verify, the first over the 1.0
// view, the second over the whole card.
func TestDualCard(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	td, err := lmosproto.ParseTD([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","@type":"lmos:Agent","id":"urn:x","title":"X",
		"securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n","actions":{"go":{"forms":[{"href":"https://x.invalid"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := cardOf(td, peer.ID("p"), nil, "http://h/a2a/p/urn:x/", true)
	dualCard(&c)
	if err := newSigner(key).signDual(&c, "http://h/a2a/jwks.json"); err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	if _, err := VerifyCard(c, pub); err != nil || len(c.Signatures) != 2 {
		t.Fatalf("the whole card: %v (%d signatures)", err, len(c.Signatures))
	}
	v := view10(c)
	v.Signatures = c.Signatures[:1]
	if _, err := VerifyCard(v, pub); err != nil {
		t.Fatalf("the 1.0 view: %v", err)
	}

	raw := mustRaw(c)
	var c03 a2a.AgentCard
	if err := json.Unmarshal(raw, &c03); err != nil {
		t.Fatalf("a2a-go reads the card: %v\n%s", err, raw)
	}
	if c03.URL != "http://h/a2a/p/urn:x/" || c03.PreferredTransport != a2a.TransportProtocolJSONRPC || c03.ProtocolVersion != ProtocolVersion03 ||
		!c03.Capabilities.Streaming || len(c03.Security) != 1 || !reflect.DeepEqual(c03.SecuritySchemes["bearer"], a2a.HTTPAuthSecurityScheme{Scheme: "bearer"}) {
		t.Fatalf("as 0.3: %+v\n%s", c03, raw)
	}
	if u, v03, err := endpointOf(c); err != nil || v03 || u != "http://h/a2a/p/urn:x/" {
		t.Fatalf("endpoint of the dual card: %s %v %v", u, v03, err)
	}
}

// TestEndpointOf: a card's JSON-RPC endpoint, of 1.0 before 0.3.
func TestEndpointOf(t *testing.T) {
	for _, tc := range []struct {
		card string
		url  string
		v03  bool
	}{
		{`{"supportedInterfaces":[{"url":"http://g","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://j","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "http://j", false},
		{`{"supportedInterfaces":[{"url":"http://old","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`, "http://old", true},
		{`{"url":"http://a","protocolVersion":"0.3.0"}`, "http://a", true},
		{`{"url":"http://a","preferredTransport":"JSONRPC"}`, "http://a", true},
		{`{"url":"http://g","preferredTransport":"GRPC","additionalInterfaces":[{"url":"http://g","transport":"GRPC"},{"url":"http://j","transport":"JSONRPC"}]}`, "http://j", true},
		{`{"url":"http://g","preferredTransport":"GRPC"}`, "", false},
	} {
		var c AgentCard
		if err := json.Unmarshal([]byte(tc.card), &c); err != nil {
			t.Fatal(err)
		}
		u, v03, err := endpointOf(c)
		if u != tc.url || v03 != tc.v03 || (err != nil) != (tc.url == "") {
			t.Errorf("%s: %q %v %v", tc.card, u, v03, err)
		}
	}
}

// TestDualCardSchema03: the dual card (with bearer security) is a valid
// A2A 0.3 AgentCard by the 0.3 JSON schema; its 1.0 view alone (the card
// the bridge served before it spoke 0.3) is not.
func TestDualCardSchema03(t *testing.T) {
	raw, err := os.ReadFile("testdata/a2a-0.3-agentcard.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("agentcard.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("agentcard.json")
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","@type":"lmos:Agent","id":"urn:x","title":"X",
		"securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n","actions":{"go":{"forms":[{"href":"https://x.invalid"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	card := cardOf(td, peer.ID("p"), nil, "http://h/a2a/p/urn:x/", true)
	dualCard(&card)
	if err := newSigner(key).signDual(&card, "http://h/a2a/jwks.json"); err != nil {
		t.Fatal(err)
	}
	valid := func(v any) error {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRaw(v)))
		if err != nil {
			t.Fatal(err)
		}
		return schema.Validate(inst)
	}
	if err := valid(card); err != nil {
		t.Fatalf("the dual card is no 0.3 card: %v\n%s", err, mustRaw(card))
	}
	if err := valid(view10(card)); err == nil {
		t.Fatal("the 1.0 view validates as a 0.3 card")
	}
}
