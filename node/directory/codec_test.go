package directory

import (
	"reflect"
	"testing"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	p := newPublisher(t, 1)
	rec := p.sign(t, thingSpec{id: thingID, seq: 3, groups: []string{"g1"}}, t0)
	tomb := p.tombstone(t, thingID, 4, t0)
	for _, env := range []envelope{
		{
			Own: true, Seq: 3, Signed: t0, Created: t0, Modified: t0.Add(time.Minute),
			ThingID: thingID, Local: Local{Backend: "http://127.0.0.1:8081"},
			Summary: summarize(rec.TD), Raw: rec.Raw,
		},
		{
			Tombstone: true, Seq: 4, Signed: t0, Created: t0, Modified: t0, Expires: t0.Add(DefaultTTL), TTL: DefaultTTL,
			ThingID: thingID, Raw: tomb.Raw,
		},
	} {
		data, err := env.marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := unmarshalEnvelope(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, env) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, env)
		}
	}
}

func TestEnvelopeErrorsNameTheField(t *testing.T) {
	env := envelope{ThingID: thingID, Summary: summary{Title: "T"}, Raw: []byte("{}")}
	data, err := env.marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unmarshalEnvelope(data[:12]); err == nil {
		t.Fatal("truncated envelope accepted")
	} else {
		t.Log(err)
	}
	bad := append([]byte{99}, data[1:]...)
	if _, err := unmarshalEnvelope(bad); err == nil {
		t.Fatal("unknown format accepted")
	}
	noRaw := data[:len(data)-2]
	if _, err := unmarshalEnvelope(noRaw); err == nil {
		t.Fatal("envelope without record accepted")
	}
}

func TestThingKey(t *testing.T) {
	p := newPublisher(t, 1)
	for _, id := range []string{thingID, "https://example.com/things/a/../b", ".", "..", "a b/c?d#e", "ü"} {
		k := thingKey(p.id, id)
		if len(k.Namespaces()) != 4 {
			t.Fatalf("key %s of %q is not one segment per part", k, id)
		}
		pub, got, err := parseThingKey(k)
		if err != nil || pub != p.id || got != id {
			t.Fatalf("parseThingKey(%s) = %s, %q, %v", k, pub, got, err)
		}
	}
}

func FuzzUnmarshalEnvelope(f *testing.F) {
	env := envelope{
		Seq: 1, Signed: t0, ThingID: thingID, Local: Local{Backend: "http://x"},
		Summary: summary{Title: "T", Types: []string{lmosproto.TypeAgent},
			Capabilities: []capSummary{{ID: "c", Version: "1.0.0", Examples: []string{"e"}}}},
		Raw: []byte(`{"id":"x"}`),
	}
	data, err := env.marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{envelopeFormat})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := unmarshalEnvelope(data)
		if err != nil {
			return
		}
		again, err := e.marshal()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := unmarshalEnvelope(again)
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-encoding changed the envelope: %v", err)
		}
	})
}
