package aitp

import (
	"encoding/json"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestCapabilities(t *testing.T) {
	td := &lmosproto.TD{Extra: map[string]json.RawMessage{PropCapabilities: json.RawMessage(
		`["https://aitp.dev/capabilities/aitp-02-decisions/v1.2.0/schema.json", 7]`)}}
	if got := Declared(td); len(got) != 1 {
		t.Fatalf("Declared: %v", got)
	}
	for url, want := range map[string]bool{
		"https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json":    true, // same major version
		"https://example.org/capabilities/aitp-02-decisions/v1.5.1/schema.json": true,
		"https://aitp.dev/capabilities/aitp-02-decisions/v2.0.0/schema.json":    false,
		"https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json":     false,
		"not a url": false,
	} {
		if supports(td, url) != want {
			t.Errorf("supports(%s) = %v", url, !want)
		}
	}
	if u := Unsupported(td); len(u) != 4 || u[0] != Known[0] {
		t.Fatalf("Unsupported: %v", u)
	}
	if u := Unsupported(&lmosproto.TD{}); len(u) != len(Known) {
		t.Fatalf("an agent that declares nothing supports nothing: %v", u)
	}
	for content, want := range map[string]string{
		`{"$schema":"https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json","quote":{}}`: "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json",
		"hello": "", `{"a":1}`: "", `{broken`: "",
	} {
		if got := messageCapability(content); got != want {
			t.Errorf("messageCapability(%s) = %q", content, got)
		}
	}
}

func TestStringsOf(t *testing.T) {
	for raw, want := range map[string]string{
		`"hi"`:                                    `["hi"]`,
		`["a","b"]`:                               `["a","b"]`,
		`[{"type":"text","text":"a"}]`:            `["a"]`,
		`[{"type":"text","text":{"value":"b"}}]`:  `["b"]`,
		`[{"schema":"https://x.invalid/s.json"}]`: `["https://x.invalid/s.json"]`,
	} {
		got, ok := stringsOf(json.RawMessage(raw))
		b, _ := json.Marshal(got)
		if !ok || string(b) != want {
			t.Errorf("stringsOf(%s) = %s %v", raw, b, ok)
		}
	}
	for _, raw := range []string{`7`, `[1]`, `[{"type":"image_url"}]`} {
		if _, ok := stringsOf(json.RawMessage(raw)); ok {
			t.Errorf("stringsOf(%s) accepted", raw)
		}
	}
}

// TestCheckMessage: messages of the capabilities AITP defines are checked
// against their official schemas (01 and 02 are OpenAPI documents).
func TestCheckMessage(t *testing.T) {
	const dec = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"
	const pay = "https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json"
	const evm = "https://aitp.dev/capabilities/aitp-05-evm-wallet/v1.0.0/schema.json"
	for _, tc := range []struct {
		url, content string
		ok           bool
	}{
		{dec, `{"$schema":"` + dec + `","decision":{"options":[{"id":"f2"}]}}`, true},
		{dec, `{"$schema":"` + dec + `","decision":{"options":[]}}`, false}, // minItems 1
		{pay, `{"$schema":"` + pay + `","quote":{"quote_id":"q","merchant_id":"m","description":"d","merchant_signature":"s","payment_options":[]}}`, true},
		{pay, `{"$schema":"` + pay + `","quote":{"quote_id":"q"}}`, false},
		{evm, `{"$schema":"` + evm + `","request_address":{"request_id":"r","chain_id":1}}`, true},
		{evm, `{"$schema":"` + evm + `","request_address":{"request_id":"r","chain_id":"one"}}`, false},
		{"https://example.org/capabilities/my-own/v1.0.0/schema.json", `{"anything":1}`, true}, // not AITP's: not checked
	} {
		if err := checkMessage(tc.url, tc.content); (err == nil) != tc.ok {
			t.Errorf("checkMessage(%s): %v, want ok %v", tc.content, err, tc.ok)
		}
	}
}
