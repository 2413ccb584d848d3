package proto

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A plain TD 1.1 document (no LMOS context) signs into a record that binds
// the "lmos" prefix for the lmos:seq the signer adds, verifies, and keeps
// every context entry the author wrote, in order.
func TestSignThingBindsLMOS(t *testing.T) {
	const bind = `{"lmos":"https://eclipse.dev/lmos/protocol/v1"}`
	for name, tc := range map[string]struct{ ctx, want string }{
		"string":           {`"https://www.w3.org/2022/wot/td/v1.1"`, `["https://www.w3.org/2022/wot/td/v1.1",` + bind + `]`},
		"array":            {`["https://www.w3.org/2022/wot/td/v1.1",{"saref":"https://w3id.org/saref#"}]`, `["https://www.w3.org/2022/wot/td/v1.1",{"saref":"https://w3id.org/saref#"},` + bind + `]`},
		"td 1.0 then 1.1":  {`["https://www.w3.org/2019/wot/td/v1","https://www.w3.org/2022/wot/td/v1.1"]`, `["https://www.w3.org/2019/wot/td/v1","https://www.w3.org/2022/wot/td/v1.1",` + bind + `]`},
		"already bound":    {`["https://www.w3.org/2022/wot/td/v1.1",` + bind + `]`, `["https://www.w3.org/2022/wot/td/v1.1",` + bind + `]`},
		"bound with other": {`["https://www.w3.org/2022/wot/td/v1.1",{"x":"https://x.example/",` + bind[1:] + `]`, `["https://www.w3.org/2022/wot/td/v1.1",{"x":"https://x.example/",` + bind[1:] + `]`},
	} {
		t.Run(name, func(t *testing.T) {
			doc := `{"@context":` + tc.ctx + `,"id":"urn:example:lamp","title":"Lamp","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`
			if err := ValidateTD([]byte(doc)); err != nil {
				t.Fatalf("input: %v", err)
			}
			td, err := ParseTD([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			td.Seq = 1
			rec, err := SignThing(td, testKey(t), time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatalf("SignThing: %v", err)
			}
			if string(rec.TD.Context) != tc.want {
				t.Errorf("@context = %s, want %s", rec.TD.Context, tc.want)
			}
			if _, err := VerifyDocument(rec.Raw); err != nil {
				t.Errorf("signed record does not verify: %v", err)
			}
			if err := ValidateTD(rec.Raw); err != nil {
				t.Errorf("signed record is not a valid TD: %v", err)
			}
			// What a peer parses is what the signer holds.
			if got, err := ParseRecord(rec.Raw); err != nil || got.ThingID != rec.ThingID || got.Seq != rec.Seq || string(got.TD.Context) != string(rec.TD.Context) {
				t.Errorf("ParseRecord of the signed bytes: %v, %+v", err, got)
			}
			if string(td.Context) != tc.ctx {
				t.Errorf("SignThing changed its argument's @context to %s", td.Context)
			}
		})
	}
}

// A TD without lmos: terms keeps its @context as written; one that binds
// "lmos" to another IRI is left alone (and refused by ValidateTD).
func TestBindLMOSLeavesAlone(t *testing.T) {
	plain, err := ParseTD([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := plain.BindLMOS(); err != nil || string(got) != `"https://www.w3.org/2022/wot/td/v1.1"` {
		t.Errorf("no lmos term: %s, %v", got, err)
	}
	wrong, err := ParseTD([]byte(`{"@context":["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://wrong.example/"}],"title":"x","lmos:seq":1}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := wrong.BindLMOS()
	if err != nil || !json.Valid(got) || !strings.Contains(string(got), "wrong.example") || strings.Contains(string(got), ContextLMOS) {
		t.Errorf("wrong binding: %s, %v", got, err)
	}
	wrong.ID = "urn:x"
	if _, err := SignThing(wrong, testKey(t), time.Now()); err == nil || !strings.Contains(err.Error(), "/@context/1/lmos") {
		t.Errorf("SignThing with lmos bound elsewhere: %v, want a /@context/1/lmos error", err)
	}
}
