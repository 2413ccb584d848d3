package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jsonEqual reports whether two JSON documents have the same data: the
// same members (in any order), the same items, numbers equal as numbers.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode %.80q: %v", data, err)
		}
		return v
	}
	return sameJSON(decode(a), decode(b))
}

func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(a.String())
		y, oky := new(big.Rat).SetString(b.String())
		return okx && oky && x.Cmp(y) == 0
	default:
		return a == b
	}
}

// Every TD of the conformance corpus that parses comes back out of
// MarshalJSON as the same JSON data; every valid and warning TD parses.
func TestRoundTripConformance(t *testing.T) {
	for _, set := range []string{"valid", "warning", "invalid"} {
		for name, data := range corpus(t, set) {
			td, err := ParseTD(data)
			if err != nil {
				if set != "invalid" {
					t.Errorf("%s/%s: %v", set, name, err)
				}
				continue
			}
			out, err := td.MarshalJSON()
			if err != nil {
				t.Errorf("%s/%s: marshal: %v", set, name, err)
				continue
			}
			if !jsonEqual(t, data, out) {
				t.Errorf("%s/%s: round trip changed the document:\n%s", set, name, out)
			}
			if !jsonEqual(t, out, mustMarshal(t, td.Clone())) {
				t.Errorf("%s/%s: Clone marshals differently", set, name)
			}
		}
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden files: testdata/golden/td/X.in.json is parsed and written back;
// the result, indented, is X.golden.json. Run with -update to rewrite.
func TestGoldenTD(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "golden", "td", "*.in.json"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateTD(data); err != nil {
				t.Errorf("golden input is not a valid TD: %v", err)
			}
			td, err := ParseTD(data)
			if err != nil {
				t.Fatal(err)
			}
			out, err := td.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, data, out) {
				t.Errorf("round trip changed the document")
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, out, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := filepath.Join("testdata", "golden", "td", name+".golden.json")
			if *UpdateGolden {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenTD -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs; got:\n%s", golden, pretty.Bytes())
			}
		})
	}
}

func readGolden(t *testing.T, name string) *TD {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "td", name+".in.json"))
	if err != nil {
		t.Fatal(err)
	}
	td, err := ParseTD(data)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func TestTDAccessors(t *testing.T) {
	agent := readGolden(t, "weather-agent")
	if !agent.IsAgent() || agent.IsTool() || !agent.HasType(TypeAgent) {
		t.Errorf("weather agent: IsAgent %v, IsTool %v", agent.IsAgent(), agent.IsTool())
	}
	if got := agent.Vendor(); got != "Example Weather GmbH" {
		t.Errorf("Vendor() = %q", got)
	}
	if agent.Seq != 7 || len(agent.Capabilities) != 2 || agent.Capabilities[0].ID != "weather-forecast" ||
		agent.Capabilities[0].Version != "1.2.0" || len(agent.Capabilities[0].Examples) != 2 {
		t.Errorf("LMOS members: seq %d, capabilities %+v", agent.Seq, agent.Capabilities)
	}
	if string(agent.Capabilities[1].Extra["lmos:channel"]) != `"push"` {
		t.Errorf("capability Extra = %v", agent.Capabilities[1].Extra)
	}
	act := agent.Actions["getWeather"]
	if act == nil || act.Safe == nil || !*act.Safe || act.Idempotent == nil || *act.Idempotent || len(act.Input) == 0 {
		t.Fatalf("getWeather = %+v", act)
	}
	if f := act.Forms[0]; f.Href == "" || f.Op[0] != "invokeaction" || string(f.Extra["htv:methodName"]) != `"POST"` {
		t.Errorf("getWeather form = %+v", f)
	}
	if ev := agent.Events["userFeedbackReceived"]; len(ev.Forms[0].Op) != 2 || len(ev.Data) == 0 {
		t.Errorf("event = %+v", ev)
	}
	if agent.Metadata.Model == nil || agent.Metadata.Extra["lmos:languages"] == nil {
		t.Errorf("metadata = %+v", agent.Metadata)
	}

	tool := readGolden(t, "geocoder-tool")
	if !tool.IsTool() || tool.IsAgent() || tool.Vendor() != "Example Maps AG" || tool.Groups[0] != "grp-partner-weather" {
		t.Errorf("tool: types %v, vendor %q, groups %v", tool.Types, tool.Vendor(), tool.Groups)
	}
	if (&TD{}).Vendor() != "" || (&TD{Metadata: &Metadata{}}).Vendor() != "" {
		t.Error("Vendor of a TD without vendor is not empty")
	}
}

func TestPropertyDataSchema(t *testing.T) {
	agent := readGolden(t, "weather-agent")
	schema, err := agent.Properties["modelConfiguration"].DataSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"Current configuration of the underlying LLM.","readOnly":true,"properties":{"maxTokens":{"type":"integer"},"modelName":{"type":"string"},"temperature":{"maximum":1,"minimum":0,"type":"number"}},"type":"object"}`
	if !jsonEqual(t, schema, []byte(want)) {
		t.Errorf("DataSchema = %s\nwant %s", schema, want)
	}
	if agent.Properties["modelConfiguration"].Forms == nil {
		t.Error("DataSchema modified the affordance")
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := readGolden(t, "weather-agent")
	before, _ := orig.MarshalJSON()
	c := orig.Clone()
	c.Types[0] = "lmos:Tool"
	c.Properties["modelConfiguration"].Forms[0].Href = "changed"
	*c.Actions["getWeather"].Safe = false
	c.Actions["getWeather"].Input[0] = ' '
	c.Events["userFeedbackReceived"].Forms[0].Op[0] = "x"
	c.Links[0].Extra["hreflang"] = json.RawMessage(`"de"`)
	c.Metadata.Vendor.Name = "changed"
	c.Capabilities[0].Examples[0] = "changed"
	c.SecurityDefinitions["bearer_sc"][0] = ' '
	c.Security[0] = "x"
	c.Context[0] = ' '
	after, _ := orig.MarshalJSON()
	if !bytes.Equal(before, after) {
		t.Errorf("mutating the clone changed the original:\n%s\n%s", before, after)
	}
	if (*TD)(nil).Clone() != nil {
		t.Error("Clone of nil TD is not nil")
	}
}

// JSON forms the typed fields cannot express on their own survive a round
// trip; TDs built in code get the plain forms.
func TestShapePreserved(t *testing.T) {
	for _, doc := range []string{
		`{"@type":["lmos:Agent"],"title":"","lmos:seq":0}`,
		`{"@type":"lmos:Agent","security":"a","forms":[{"href":"","op":["readproperty"],"security":[]}]}`,
		`{"@type":[],"lmos:groups":[],"lmos:capabilities":[{"lmos:id":"","lmos:examples":[]}],"properties":{},"actions":{}}`,
		`{"lmos:metadata":{"lmos:vendor":{"lmos:name":"","lmos:url":""}},"links":[{"href":"","rel":"","type":""}]}`,
		`{"properties":{"p":{"title":"","description":"","readOnly":false,"forms":[]}},"events":{"e":{"title":"","data":null}}}`,
		`{"actions":{"a":{"safe":false,"input":null,"output":{},"forms":[{"href":"x","contentType":"","subprotocol":""}]}}}`,
		`{"lmos:seq":1.0e1,"proof":{"type":"DataIntegrityProof"},"x:other":[1,{"y":null}],"@context":"https://www.w3.org/2022/wot/td/v1.1"}`,
	} {
		td, err := ParseTD([]byte(doc))
		if err != nil {
			t.Errorf("ParseTD(%s): %v", doc, err)
			continue
		}
		out, err := td.MarshalJSON()
		if err != nil {
			t.Errorf("MarshalJSON(%s): %v", doc, err)
			continue
		}
		if !jsonEqual(t, []byte(doc), out) {
			t.Errorf("round trip of %s gave %s", doc, out)
		}
	}

	td := &TD{Context: LMOSContext(), Types: []string{TypeAgent}, Title: "A", Security: []string{"nosec_sc"},
		Forms: []Form{{Href: "h", Op: []string{"readallproperties"}}}, Seq: 1}
	got := string(mustMarshal(t, td))
	want := `{"@context":["https://www.w3.org/2019/wot/td/v1","https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}],"@type":"lmos:Agent","title":"A","lmos:seq":1,"security":"nosec_sc","forms":[{"href":"h","op":"readallproperties"}]}`
	if got != want {
		t.Errorf("built TD marshals as\n%s\nwant\n%s", got, want)
	}
}

// A typed field is the one source of truth: an Extra entry of the same
// name is not written.
func TestTypedFieldWinsOverExtra(t *testing.T) {
	td := &TD{Title: "typed", Extra: map[string]json.RawMessage{"title": json.RawMessage(`"extra"`), "lmos:seq": json.RawMessage(`5`), "z": json.RawMessage(`1`)}}
	got := string(mustMarshal(t, td))
	if want := `{"title":"typed","z":1}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseTDErrors(t *testing.T) {
	for _, tc := range []struct {
		doc, ptr string
	}{
		{`[]`, ""},
		{`null`, ""},
		{`{"title":1}`, "/title"},
		{`{"title":null}`, "/title"},
		{`{"@type":{"a":1}}`, "/@type"},
		{`{"@type":["a",2]}`, "/@type/1"},
		{`{"properties":[]}`, "/properties"},
		{`{"properties":{"a/b":"x"}}`, "/properties/a~1b"},
		{`{"properties":{"p":{"forms":[{"href":1}]}}}`, "/properties/p/forms/0/href"},
		{`{"actions":{"a":{"safe":"yes"}}}`, "/actions/a/safe"},
		{`{"events":{"e":{"forms":{}}}}`, "/events/e/forms"},
		{`{"links":[{"rel":["type"]}]}`, "/links/0/rel"},
		{`{"security":1}`, "/security"},
		{`{"securityDefinitions":"x"}`, "/securityDefinitions"},
		{`{"lmos:metadata":{"lmos:vendor":{"lmos:url":false}}}`, "/lmos:metadata/lmos:vendor/lmos:url"},
		{`{"lmos:metadata":[]}`, "/lmos:metadata"},
		{`{"lmos:capabilities":[{"lmos:examples":"one"}]}`, "/lmos:capabilities/0/lmos:examples"},
		{`{"lmos:groups":"g"}`, "/lmos:groups"},
		{`{"lmos:seq":-1}`, "/lmos:seq"},
		{`{"lmos:seq":1.5}`, "/lmos:seq"},
		{`{"lmos:seq":"1"}`, "/lmos:seq"},
		{`{"lmos:seq":18446744073709551616}`, "/lmos:seq"},
	} {
		_, err := ParseTD([]byte(tc.doc))
		var ve ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("ParseTD(%s) = %v, want a ValidationError", tc.doc, err)
			continue
		}
		if ve.Pointer != tc.ptr {
			t.Errorf("ParseTD(%s): pointer %q, want %q (%v)", tc.doc, ve.Pointer, tc.ptr, err)
		}
	}
	for _, doc := range []string{``, `{`, `{"a":1}x`, `{"a":}`} {
		if _, err := ParseTD([]byte(doc)); err == nil {
			t.Errorf("ParseTD(%q) accepted", doc)
		}
	}
	big := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), MaxTDSize)...)
	if _, err := ParseTD(append(big, `"}`...)); err == nil {
		t.Error("ParseTD accepted a document over MaxTDSize")
	}
}

func FuzzParseTD(f *testing.F) {
	for _, set := range []string{"valid", "invalid", "warning"} {
		for _, data := range corpus(f, set) {
			f.Add(data)
		}
	}
	ins, _ := filepath.Glob(filepath.Join("testdata", "golden", "td", "*.in.json"))
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := ParseTD(data)
		if err != nil {
			return
		}
		out, err := td.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of a parsed TD: %v", err)
		}
		if !hasDuplicateKeys(data) && !jsonEqual(t, data, out) {
			t.Fatalf("round trip changed the document:\n in %s\nout %s", data, out)
		}
		again, err := ParseTD(out)
		if err != nil {
			t.Fatalf("ParseTD of our own output: %v\n%s", err, out)
		}
		out2, err := again.MarshalJSON()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("second round trip differs (%v):\n%s\n%s", err, out, out2)
		}
	})
}

// hasDuplicateKeys reports whether ValidateTD finds a duplicate member;
// such a document is not expected to round-trip (the last one wins).
func hasDuplicateKeys(data []byte) bool {
	errs, _, _ := scanTD(data)
	for _, e := range errs {
		if strings.HasPrefix(e.Message, "duplicate member") {
			return true
		}
	}
	return false
}

func BenchmarkParseMarshalTD(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "td", "weather-agent.in.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		td, err := ParseTD(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := td.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOrganizationOf: the claim read from a document alone is the one
// its parsed TD has: a string member, exactly as named; nothing for
// another type, another case of the name, or a document that is not an
// object.
func TestOrganizationOf(t *testing.T) {
	base, err := os.ReadFile("../examples/things/weather-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	with := func(member, value string) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		m[member] = json.RawMessage(value)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"none", base, ""},
		{"claimed", with(MemberOrganization, `"did:web:org.example"`), "did:web:org.example"},
		{"escaped", with(MemberOrganization, `"did:web:org\u002eexample"`), "did:web:org.example"},
		{"not a string", with(MemberOrganization, `{"id": "did:web:org.example"}`), ""},
		{"other case", with("LMOS:Organization", `"did:web:org.example"`), ""},
	} {
		td, err := ParseTD(tc.doc)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := OrganizationOf(tc.doc); got != tc.want || got != td.Organization() {
			t.Errorf("%s: OrganizationOf %q, TD.Organization %q; want %q", tc.name, got, td.Organization(), tc.want)
		}
	}
	if got := OrganizationOf([]byte(`["did:web:org.example"]`)); got != "" {
		t.Errorf("an array: %q", got)
	}
}
