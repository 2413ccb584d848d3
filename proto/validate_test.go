package proto

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const lmosContext = `"@context":["https://www.w3.org/2019/wot/td/v1","https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}]`

// lmosTD returns a valid LMOS TD with members appended (each starting with
// a comma).
func lmosTD(members string) string {
	return `{` + lmosContext + `,"@type":"lmos:Agent","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"` + members + `}`
}

// plainTD returns a valid TD without the LMOS context, members appended.
func plainTD(members string) string {
	return `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"` + members + `}`
}

func validationErrors(t *testing.T, doc string) ValidationErrors {
	t.Helper()
	err := ValidateTD([]byte(doc))
	if err == nil {
		return nil
	}
	var errs ValidationErrors
	if !errors.As(err, &errs) {
		t.Fatalf("ValidateTD returned %T %v, want ValidationErrors", err, err)
	}
	if len(errs) == 0 {
		t.Fatal("ValidateTD returned an empty ValidationErrors")
	}
	return errs
}

func pointers(errs ValidationErrors) []string {
	var ps []string
	for _, e := range errs {
		ps = append(ps, e.Pointer)
	}
	return ps
}

func TestValidateTD(t *testing.T) {
	deep := strings.Repeat(`[`, MaxTDDepth) + strings.Repeat(`]`, MaxTDDepth)
	tests := []struct {
		name string
		doc  string
		// want lists the pointers of the errors, in order; nil means valid.
		want []string
		// msg, if set, is a substring of the first error's message.
		msg string
	}{
		{"valid LMOS agent", lmosTD(`,"lmos:seq":0,"lmos:groups":["g1"],"lmos:capabilities":[{"lmos:id":"c","lmos:version":"1.2.0-rc.1+b7","lmos:description":"d","lmos:examples":["e"]}],"lmos:metadata":{"lmos:vendor":{"lmos:name":"V","lmos:url":"https://v.example"},"lmos:model":"m"}`), nil, ""},
		{"valid plain TD", plainTD(""), nil, ""},
		{"seq written as 1.0", lmosTD(`,"lmos:seq":1.0`), nil, ""},

		{"not an object", `["a"]`, []string{""}, "must be a JSON object, got an array"},
		{"null", `null`, []string{""}, "got null"},
		{"syntax error", `{"title":`, []string{""}, "invalid JSON"},
		{"trailing data", plainTD("") + `{}`, []string{""}, "data after the TD object"},
		{"deep at the limit", plainTD(`,"x":` + deep[1:len(deep)-1]), nil, ""},
		{"too deep", plainTD(`,"x":` + deep), []string{"/x" + strings.Repeat("/0", MaxTDDepth-1)}, "nested more than"},
		{"too large", plainTD(`,"x":"` + strings.Repeat("a", MaxTDSize) + `"`), []string{""}, "more than the 65536 allowed"},

		{"duplicate top-level member", plainTD(`,"title":"again"`), []string{"/title"}, `duplicate member "title"`},
		{"duplicate in an array item", plainTD(`,"links":[{"href":"a","href":"b"}]`), []string{"/links/0/href"}, "duplicate"},
		{"duplicate name escaped", plainTD(`,"x":{"a/b~":1,"a/b~":2}`), []string{"/x/a~1b~0"}, "duplicate"},
		{"duplicate empty name", plainTD(`,"x":{"":1,"a":2,"":3}`), []string{"/x/"}, `duplicate member ""`},
		{"duplicate affordance", plainTD(`,"events":{"e":{"forms":[{"href":"h"}]},"e":{"forms":[{"href":"h"}]}}`), []string{"/events/e"}, "duplicate"},

		{"undefined top-level security", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"basic_sc"}`, []string{"/security"}, `security scheme "basic_sc" is not defined in securityDefinitions`},
		{"undefined security in array", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":["nosec_sc","basic_sc"]}`, []string{"/security/1"}, "not defined"},
		{"undefined security in affordance form", plainTD(`,"properties":{"p":{"forms":[{"href":"h"},{"href":"h","security":"basic_sc"}]}}`), []string{"/properties/p/forms/1/security"}, "not defined"},
		{"undefined security in root form", plainTD(`,"forms":[{"href":"h","op":"readallproperties","security":["x"]}]`), []string{"/forms/0/security/0"}, "not defined"},
		{"undefined scheme in combo", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"},"c":{"scheme":"combo","oneOf":["nosec_sc","gone"]}},"security":"c"}`, []string{"/securityDefinitions/c/oneOf/1"}, "not defined"},

		{"two type links", plainTD(`,"links":[{"rel":"type","href":"a"},{"rel":"item","href":"b"},{"rel":"type","href":"c"}]`), []string{"/links/2"}, `more than one link with rel "type" (first at /links/0)`},
		{"three type links", plainTD(`,"links":[{"rel":"type","href":"a"},{"rel":"type","href":"b"},{"rel":"type","href":"c"}]`), []string{"/links/1", "/links/2"}, ""},

		{"lmos type without context", plainTD(`,"@type":"lmos:Agent"`), []string{"/@type"}, `"lmos:Agent" needs the LMOS context`},
		{"lmos type in array without context", plainTD(`,"@type":["Thing","lmos:Tool"]`), []string{"/@type/1"}, "needs the LMOS context"},
		{"lmos member without context", plainTD(`,"lmos:seq":1`), []string{"/lmos:seq"}, `"lmos:seq" needs the LMOS context`},
		{"lmos type of an affordance without context", plainTD(`,"actions":{"a":{"@type":"lmos:Skill","forms":[{"href":"h"}]}}`), []string{"/actions/a/@type"}, "needs the LMOS context"},
		{"lmos bound elsewhere", `{"@context":["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://example.com/not-lmos#"}],"@type":"lmos:Agent","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`, []string{"/@context/1/lmos"}, `prefix "lmos" is bound to "https://example.com/not-lmos#"`},
		{"LMOS URI listed but prefix not bound", `{"@context":["https://www.w3.org/2022/wot/td/v1.1","https://eclipse.dev/lmos/protocol/v1"],"@type":"lmos:Agent","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`, []string{"/@type"}, "needs the LMOS context"},

		{"capabilities not an array", lmosTD(`,"lmos:capabilities":{"lmos:id":"c"}`), []string{"/lmos:capabilities"}, "want an array of capability objects, got an object"},
		{"capability not an object", lmosTD(`,"lmos:capabilities":["c"]`), []string{"/lmos:capabilities/0"}, "want a capability object, got a string"},
		{"capability without id", lmosTD(`,"lmos:capabilities":[{"lmos:id":"a"},{"lmos:version":"1.0.0"}]`), []string{"/lmos:capabilities/1/lmos:id"}, `missing required member "lmos:id"`},
		{"capability with empty id", lmosTD(`,"lmos:capabilities":[{"lmos:id":""}]`), []string{"/lmos:capabilities/0/lmos:id"}, "want a non-empty string"},
		{"capability with numeric id", lmosTD(`,"lmos:capabilities":[{"lmos:id":7}]`), []string{"/lmos:capabilities/0/lmos:id"}, "want a non-empty string, got 7"},
		{"capability version not semver", lmosTD(`,"lmos:capabilities":[{"lmos:id":"c","lmos:version":"1.2"}]`), []string{"/lmos:capabilities/0/lmos:version"}, `"1.2" is not a semantic version`},
		{"capability version with v", lmosTD(`,"lmos:capabilities":[{"lmos:id":"c","lmos:version":"v1.2.0"}]`), []string{"/lmos:capabilities/0/lmos:version"}, "not a semantic version"},
		{"capability version a number", lmosTD(`,"lmos:capabilities":[{"lmos:id":"c","lmos:version":1}]`), []string{"/lmos:capabilities/0/lmos:version"}, "got a number"},
		{"capability description not a string", lmosTD(`,"lmos:capabilities":[{"lmos:id":"c","lmos:description":["d"]}]`), []string{"/lmos:capabilities/0/lmos:description"}, "want a string"},
		{"capability examples not strings", lmosTD(`,"lmos:capabilities":[{"lmos:id":"c","lmos:examples":["a",2]}]`), []string{"/lmos:capabilities/0/lmos:examples/1"}, "want a string, got a number"},

		{"groups not an array", lmosTD(`,"lmos:groups":"g"`), []string{"/lmos:groups"}, "want an array of strings, got a string"},
		{"group not a string", lmosTD(`,"lmos:groups":["g",{}]`), []string{"/lmos:groups/1"}, "want a string, got an object"},
		{"group empty", lmosTD(`,"lmos:groups":[""]`), []string{"/lmos:groups/0"}, "non-empty"},

		{"seq negative", lmosTD(`,"lmos:seq":-1`), []string{"/lmos:seq"}, "want a non-negative integer, got -1"},
		{"seq fraction", lmosTD(`,"lmos:seq":1.5`), []string{"/lmos:seq"}, "non-negative integer"},
		{"seq string", lmosTD(`,"lmos:seq":"3"`), []string{"/lmos:seq"}, "got a string"},
		{"seq null", lmosTD(`,"lmos:seq":null`), []string{"/lmos:seq"}, "got null"},
		{"seq too large", lmosTD(`,"lmos:seq":18446744073709551616`), []string{"/lmos:seq"}, "at most 18446744073709551615"},

		{"metadata not an object", lmosTD(`,"lmos:metadata":"m"`), []string{"/lmos:metadata"}, "want an object"},
		{"vendor not an object", lmosTD(`,"lmos:metadata":{"lmos:vendor":"V"}`), []string{"/lmos:metadata/lmos:vendor"}, "want an object"},
		{"vendor name not a string", lmosTD(`,"lmos:metadata":{"lmos:vendor":{"lmos:name":1,"lmos:url":true}}`), []string{"/lmos:metadata/lmos:vendor/lmos:name", "/lmos:metadata/lmos:vendor/lmos:url"}, "want a string"},

		{"number out of range", plainTD(`,"properties":{"p":{"type":"number","maximum":1e400,"forms":[{"href":"h"}]}}`), []string{"/properties/p/maximum"}, "number 1e400 is out of range"},
		{"negative number out of range", plainTD(`,"x":[1,-2e308]`), []string{"/x/1"}, "out of range"},
		{"invalid UTF-8 in a value", plainTD(`,"description":"caf` + "\xe9" + `"`), []string{"/description"}, "not valid UTF-8"},
		{"invalid UTF-8 in a member name", plainTD(`,"x":{"a` + "\xff" + `":1}`), []string{"/x/a\uFFFD"}, "not valid UTF-8"},
		{"lone high surrogate", plainTD(`,"description":"a\ud800b"`), []string{"/description"}, `lone surrogate \ud800`},
		{"lone low surrogate in a name", plainTD(`,"x":{"\uDC00":1}`), []string{"/x/\uFFFD"}, "lone surrogate"},
		{"reversed surrogate pair", plainTD(`,"description":"\udc00\ud800"`), []string{"/description"}, "lone surrogate"},
		{"surrogate pair", plainTD(`,"description":"\ud83d\ude00 \\ud800"`), nil, ""},
		{"id at the length limit", plainTD(`,"id":"urn:` + strings.Repeat("x", MaxIDLength-4) + `"`), nil, ""},
		{"id too long", plainTD(`,"id":"urn:` + strings.Repeat("x", MaxIDLength-3) + `"`), []string{"/id"}, "more than the 2048 allowed"},

		// Schema errors, flattened to one readable message each.
		{"schema: form without href", plainTD(`,"properties":{"status":{"forms":[{"op":"readproperty"}]}}`), []string{"/properties/status/forms/0/href"}, `missing required member "href"`},
		{"schema: title missing", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`, []string{"/title"}, `missing required member "title"`},
		{"schema: security of wrong type", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":5}`, []string{"/security"}, "wrong type: want array or string, got number"},
		{"schema: op not allowed for properties", plainTD(`,"properties":{"p":{"forms":[{"href":"h","op":"invokeaction"}]}}`), []string{"/properties/p/forms/0/op"}, `got "invokeaction", want one of "readproperty", "writeproperty", "observeproperty" or "unobserveproperty"`},
		{"schema: unknown security scheme", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"T","securityDefinitions":{"s":{"scheme":"magic"}},"security":"s"}`, []string{"/securityDefinitions/s/scheme"}, `got "magic", want one of "nosec", "auto", "combo", "basic", "digest", "apikey", "bearer", "psk", "oauth2" or a string matching ".+:.*"`},
		{"schema: id not a URI", plainTD(`,"id":"not a uri"`), []string{"/id"}, `"not a uri" is not a valid uri`},
		{"schema: thing model type", plainTD(`,"@type":"tm:ThingModel"`), []string{"/@type"}, "value not allowed here"},
		{"schema: several problems", `{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":2,"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc","actions":{"a":{}}}`, []string{"/actions/a/forms", "/title"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := validationErrors(t, tc.doc)
			if tc.want == nil {
				if errs != nil {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			if !slices.Equal(pointers(errs), tc.want) {
				t.Fatalf("pointers %q, want %q (%v)", pointers(errs), tc.want, errs)
			}
			if tc.msg != "" && !strings.Contains(errs[0].Message, tc.msg) {
				t.Errorf("message %q does not contain %q", errs[0].Message, tc.msg)
			}
		})
	}
}

func TestValidationErrorString(t *testing.T) {
	errs := ValidationErrors{
		{Message: `missing required member "title"`},
		{Pointer: "/properties/status/forms/0", Message: `missing required member "href"`},
	}
	if got, want := errs[1].Error(), `/properties/status/forms/0: missing required member "href"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := errs.Error(), `2 problems: (root): missing required member "title"; /properties/status/forms/0: missing required member "href"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TD.Validate checks what the TD would marshal to.
func TestTDValidate(t *testing.T) {
	td, err := ParseTD([]byte(lmosTD(`,"lmos:seq":3`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := td.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	td.Capabilities = []Capability{{ID: "c", Version: "one"}}
	var errs ValidationErrors
	if err := td.Validate(); !errors.As(err, &errs) || errs[0].Pointer != "/lmos:capabilities/0/lmos:version" {
		t.Fatalf("Validate = %v, want an error at /lmos:capabilities/0/lmos:version", err)
	}
}

// The schema is compiled once and used from many goroutines (run with
// -race).
func TestValidateTDConcurrent(t *testing.T) {
	docs := [][]byte{[]byte(lmosTD("")), []byte(plainTD(`,"title":"dup"`))}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			doc := docs[i%len(docs)]
			for range 20 {
				err := ValidateTD(doc)
				if (err != nil) != (i%2 == 1) {
					t.Errorf("ValidateTD(%s) = %v", doc, err)
				}
			}
		})
	}
	wg.Wait()
}

// sameDoc fails t if scanTD accepts data but builds another document
// than the schema validator's own decoder (which ValidateTD used before
// scanTD built it).
func sameDoc(t *testing.T, data []byte) {
	t.Helper()
	_, doc, ok := scanTD(data)
	if !ok {
		return
	}
	want, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("scanTD accepts what jsonschema.UnmarshalJSON refuses: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(any(doc), want) {
		t.Fatalf("scanTD's document differs from jsonschema.UnmarshalJSON's:\n%#v\n%#v", doc, want)
	}
}

// TestScanTDDocument: the document scanTD builds is the schema
// validator's reading of the bytes, for the corpus and for the corners of
// JSON (duplicates, escapes, numbers, null, nesting).
func TestScanTDDocument(t *testing.T) {
	var docs [][]byte
	for _, set := range []string{"valid", "invalid", "warning"} {
		for _, d := range corpus(t, set) {
			docs = append(docs, d)
		}
	}
	for _, d := range []string{
		`{}`,
		`{"a":1,"a":{"b":[1,2.5e3,-0,null,true,false,"x"]}}`,
		`{"s":"\u00e9\ud83d\ude00\n","n":12345678901234567890,"e":[[],{},[[{}]]]}`,
		`{"a":[{"a":[{"a":null}]}],"b":{"c":{"d":"e"},"c":3}}`,
	} {
		docs = append(docs, []byte(d))
	}
	for _, d := range docs {
		sameDoc(t, d)
	}
}

func FuzzValidateTD(f *testing.F) {
	for _, set := range []string{"valid", "invalid", "warning"} {
		for _, data := range corpus(f, set) {
			f.Add(data)
		}
	}
	f.Add([]byte(lmosTD(`,"lmos:seq":1,"lmos:groups":["g"],"lmos:capabilities":[{"lmos:id":"c","lmos:version":"1.0.0"}]`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDoc(t, data)
		err := ValidateTD(data)
		if err == nil {
			if _, perr := ParseTD(data); perr != nil {
				t.Fatalf("ValidateTD accepts a TD that ParseTD rejects: %v", perr)
			}
			return
		}
		var errs ValidationErrors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("ValidateTD returned %T %v", err, err)
		}
		for _, e := range errs {
			if e.Pointer != "" && !strings.HasPrefix(e.Pointer, "/") || e.Message == "" {
				t.Fatalf("malformed error %#v", e)
			}
		}
	})
}

func ExampleValidateTD() {
	td := []byte(`{
		"@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1",
		             {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
		"@type": "lmos:Agent",
		"title": "WeatherAgent",
		"securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
		"security": "nosec_sc",
		"lmos:capabilities": [{"lmos:id": "weather-forecast", "lmos:version": "1.2"}],
		"properties": {"status": {"type": "string", "forms": [{"op": "readproperty"}]}}
	}`)
	var errs ValidationErrors
	if errors.As(ValidateTD(td), &errs) {
		for _, e := range errs {
			fmt.Println(e)
		}
	}
	// Output:
	// /lmos:capabilities/0/lmos:version: "1.2" is not a semantic version (like 1.2.0): invalid semantic version
	// /properties/status/forms/0/href: missing required member "href"
}

func BenchmarkValidateTD(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "td", "weather-agent.in.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateTD(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignThing is the publisher's cost of one version: validate,
// canonicalise and sign, verify the proof again.
func BenchmarkSignThing(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "td", "weather-agent.in.json"))
	if err != nil {
		b.Fatal(err)
	}
	td, err := ParseTD(data)
	if err != nil {
		b.Fatal(err)
	}
	td.Seq = 1
	key := testKey(b)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SignThing(td, key, now); err != nil {
			b.Fatal(err)
		}
	}
}
