package a2abridge

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func text(s string) Part { return TextPart(s) }

func TestInputOf(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		parts        []Part
		want         string // the input's JSON, or the error's code as "!code"
	}{
		{"text to a string", `{"type":"string"}`, []Part{text("hi")}, `"hi"`},
		{"texts joined", `{"type":"string"}`, []Part{text("a"), text("b")}, `"a\nb"`},
		{"no schema", ``, []Part{text("hi")}, `"hi"`},
		{"data as is", `{"type":"object"}`, []Part{{Data: json.RawMessage(`{"q":1}`)}}, `{"q":1}`},
		{"text that is an object", `{"type":"object"}`, []Part{text(`{"q":"x"}`)}, `{"q":"x"}`},
		{"text into the one required string", `{"type":"object","properties":{"question":{"type":"string"},"n":{"type":"integer"}},"required":["question"]}`, []Part{text("rain?")}, `{"question":"rain?"}`},
		{"text into the one string member", `{"type":"object","properties":{"question":{"type":"string"}}}`, []Part{text("rain?")}, `{"question":"rain?"}`},
		{"object without a string slot", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}`, []Part{text("x")}, "!-32602"},
		{"number as text", `{"type":"integer"}`, []Part{text("42")}, `42`},
		{"not a number", `{"type":"integer"}`, []Part{text("many")}, "!-32602"},
		{"file part", `{"type":"string"}`, []Part{{URL: "https://x.invalid/f.pdf"}}, "!-32005"},
		{"data and text, no property", `{"type":"string"}`, []Part{text("a"), {Data: json.RawMessage(`1`)}}, "!-32602"},
		{"two data parts", `{"type":"object"}`, []Part{{Data: json.RawMessage(`{}`)}, {Data: json.RawMessage(`{}`)}}, "!-32602"},
		{"data and text: the one free string", `{"type":"object","properties":{"doc":{"type":"object"},"lang":{"type":"string"},"instruction":{"type":"string"}}}`,
			[]Part{{Data: json.RawMessage(`{"doc":{"n":12345678901234567890},"lang":"de"}`)}, text("summarise"), text("briefly")}, `{"doc":{"n":12345678901234567890},"instruction":"summarise\nbriefly","lang":"de"}`},
		{"data and text: the one required free string", `{"type":"object","properties":{"q":{"type":"string"},"note":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`,
			[]Part{text("rain?"), {Data: json.RawMessage(`{"n":3}`)}}, `{"n":3,"q":"rain?"}`},
		{"data and text: two free strings", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
			[]Part{text("x"), {Data: json.RawMessage(`{}`)}}, "!-32602"},
		{"data and text: every string set", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			[]Part{text("x"), {Data: json.RawMessage(`{"a":"y"}`)}}, "!-32602"},
		{"data and text: data not an object", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			[]Part{text("x"), {Data: json.RawMessage(`[1]`)}}, "!-32602"},
		{"data and empty text", `{"type":"object"}`, []Part{{Data: json.RawMessage(`{"q":1}`)}, text("")}, `{"q":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &lmosproto.ActionAffordance{Input: json.RawMessage(tc.schema)}
			v, err := inputOf(a, "act", tc.parts)
			got := string(v.JSON())
			if err != nil {
				got = "!" + itoa(err.Code)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s (%v)", got, tc.want, err)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestActionOf(t *testing.T) {
	one := &lmosproto.TD{ID: "a", Actions: map[string]*lmosproto.ActionAffordance{"chat": {}}}
	two := &lmosproto.TD{ID: "b", Actions: map[string]*lmosproto.ActionAffordance{"chat": {}, "plan": {}}}
	md := json.RawMessage(`{"lmos:action":"plan"}`)
	for _, tc := range []struct {
		td   *lmosproto.TD
		md   []json.RawMessage
		want string
	}{
		{one, nil, "chat"},
		{two, nil, "!-32602"},
		{two, []json.RawMessage{md}, "plan"},
		{one, []json.RawMessage{md}, "!-32602"},
		{two, []json.RawMessage{nil, md}, "plan"}, // request metadata when the message has none
		{&lmosproto.TD{ID: "c"}, nil, "!-32004"},
	} {
		got, err := actionOf(tc.td, tc.md...)
		if err != nil {
			got = "!" + itoa(err.Code)
		}
		if got != tc.want {
			t.Errorf("%s %s: got %s, want %s", tc.td.ID, tc.md, got, tc.want)
		}
	}
}

func TestValueOfParts(t *testing.T) {
	for _, tc := range []struct {
		parts []Part
		want  string
	}{
		{[]Part{text("a"), text("b")}, `"ab"`},
		{[]Part{{Data: json.RawMessage(`{"x":1}`)}}, `{"x":1}`},
		{[]Part{text("a"), {Data: json.RawMessage(`2`)}, {URL: "u", MediaType: "m"}}, `["a",2,{"mediaType":"m","url":"u"}]`},
	} {
		v, ok := valueOf(tc.parts)
		if !ok || string(v.JSON()) != tc.want {
			t.Errorf("valueOf: got %s, want %s", v.JSON(), tc.want)
		}
		// and back: LMOS output to parts
		back := partsOf(v)
		if len(back) != 1 {
			t.Errorf("partsOf(%s) = %d parts", v.JSON(), len(back))
		}
	}
	if _, ok := valueOf(nil); ok {
		t.Error("valueOf(nil) is a value")
	}
}

// TestCardSignature signs a card and verifies it; any change of a signed
// member breaks the signature, a change of an empty member does not (it
// is not signed, §8.4.1).
func TestCardSignature(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	s := newSigner(key)
	td, err := lmosproto.ParseTD([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","@type":"lmos:Agent","id":"urn:x","title":"X","description":"does x",
		"securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n",
		"lmos:capabilities":[{"lmos:id":"x","lmos:version":"1.0.0","lmos:examples":["do x"]}],
		"actions":{"go":{"forms":[{"href":"https://x.invalid"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := cardOf(td, peer.ID("p"), nil, "http://h/a2a/p/urn:x/", true)
	if err := s.sign(&c, "http://h/a2a/jwks.json"); err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	kid, err := VerifyCard(c, pub)
	if err != nil || !strings.HasPrefix(kid, "did:key:z6Mk") {
		t.Fatalf("verify: %q %v", kid, err)
	}
	if c.Skills[0].Name != "x 1.0.0" || c.SecurityRequirements == nil || c.Capabilities.Extensions[0].URI != ExtensionLMOS {
		t.Fatalf("card %+v", c)
	}
	same := c
	same.DocumentationURL = "" // empty: not part of the signed form
	if _, err := VerifyCard(same, pub); err != nil {
		t.Fatalf("an empty member broke the signature: %v", err)
	}
	changed := c
	changed.Description = "does y"
	if _, err := VerifyCard(changed, pub); err == nil {
		t.Fatal("a changed card verifies")
	}
	_, other, _ := ed25519.GenerateKey(nil)
	if _, err := VerifyCard(c, other.Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("the card verifies with another key")
	}
}

// TestTasksMakeRoom: a full store pushes out the task finished first and
// refuses only when every task still runs.
func TestTasksMakeRoom(t *testing.T) {
	ts := tasks{retention: time.Hour, max: 2, byID: map[string]*task{}}
	a, b, c := newTask("c", "t", "x", Message{}), newTask("c", "t", "x", Message{}), newTask("c", "t", "x", Message{})
	for _, x := range []*task{a, b} {
		if err := ts.add(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.add(c); err == nil {
		t.Fatal("a third running task was kept")
	}
	b.fail("done")
	a.fail("done")
	if err := ts.add(c); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.get(b.id); ok {
		t.Fatal("the task finished first is still held")
	}
	if _, ok := ts.get(a.id); !ok {
		t.Fatal("the task finished last was pushed out")
	}
}

// FuzzSendMessageParams: any params of SendMessage decode, or are
// refused, without a panic, and the parts of a decoded message map to an
// input or an error.
func FuzzSendMessageParams(f *testing.F) {
	f.Add([]byte(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`))
	f.Add([]byte(`{"message":{"messageId":"m","parts":[{"data":{"a":[1,2]}}]},"metadata":{"lmos:action":"x"}}`))
	f.Add([]byte(`{"message":{"parts":[{"url":"u"},{"raw":"AAEC"}]}}`))
	schema := &lmosproto.ActionAffordance{Input: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p SendMessageRequest
		if json.Unmarshal(data, &p) != nil || p.Message == nil {
			return
		}
		v, err := inputOf(schema, "act", p.Message.Parts)
		if err == nil && !json.Valid(v.JSON()) {
			t.Fatalf("input %q is not JSON", v.JSON())
		}
		_ = metaString(metaAction, p.Message.Metadata, p.Metadata)
	})
}

// TestTaskBounds: a long invocation keeps the latest events, parts and
// messages only; a stream that fell behind goes on from the oldest kept.
func TestTaskBounds(t *testing.T) {
	tk := newTask("c", "t", "x", Message{})
	req := lmosproto.NewMessage("t", lmosproto.MsgInvokeAction)
	for i := range 3 * maxEvents {
		m := req.Reply(lmosproto.MsgActionStatus)
		m.Status, m.Output = lmosproto.ActionRunning, lmosproto.StringValue(itoa(i))
		tk.apply(m)
	}
	tk.mu.Lock()
	kept, dropped, parts := len(tk.events), tk.dropped, len(tk.arts[0].Parts)
	tk.mu.Unlock()
	if kept > 2*maxEvents || dropped == 0 || parts > 2*maxParts {
		t.Fatalf("kept %d events (dropped %d), %d parts", kept, dropped, parts)
	}
	evs, after, _, done := tk.next(0)
	if len(evs) != kept || after != dropped+kept || done {
		t.Fatalf("next(0): %d events, after %d, done %v", len(evs), after, done)
	}
	last := evs[len(evs)-1].ArtifactUpdate
	if last == nil || *last.Artifact.Parts[0].Text != itoa(3*maxEvents-1) {
		t.Fatalf("last event %+v", evs[len(evs)-1])
	}
	for range 3 * maxHistory {
		tk.mu.Lock()
		tk.addHistoryLocked(Message{MessageID: "m"})
		tk.mu.Unlock()
	}
	if h := len(tk.snapshot(nil).History); h > 2*maxHistory {
		t.Fatalf("history of %d messages", h)
	}
}
