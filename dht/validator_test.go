package dht

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multibase"

	"github.com/lmosnode/lmosnode/proto"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func fixedClock(at time.Time) func() time.Time { return func() time.Time { return at } }

func TestThingValidatorValidate(t *testing.T) {
	alice, bob := newPublisher(t), newPublisher(t)
	const id = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"
	v := ThingValidator{Now: fixedClock(t0)}

	good := alice.sign(t, id, 1, t0.Add(-time.Hour))
	tomb := alice.tombstone(t, id, 2, t0.Add(-time.Minute))
	aliceKey := ThingKey(alice.id, id)

	forged := bytes.Replace(good.Raw, []byte(`"WeatherAgent"`), []byte(`"EvilAgent"`), 1)
	if bytes.Equal(forged, good.Raw) {
		t.Fatal("test TD has no title to forge")
	}
	unsigned, err := testTD(t, id, 1).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	oversized := append(bytes.Clone(good.Raw[:len(good.Raw)-1]), bytes.Repeat([]byte(" "), proto.MaxRecordSize)...)
	oversized = append(oversized, '}')

	for name, c := range map[string]struct {
		key   string
		value []byte
		now   time.Time
		err   error  // nil: valid
		want  string // in the error text
	}{
		"TD":                       {aliceKey, good.Raw, t0, nil, ""},
		"tombstone":                {aliceKey, tomb.Raw, t0, nil, ""},
		"exactly MaxRecordAge old": {aliceKey, good.Raw, t0.Add(-time.Hour + MaxRecordAge), nil, ""},
		"within clock skew":        {aliceKey, good.Raw, t0.Add(-time.Hour - MaxClockSkew), nil, ""},

		"forged signature":     {aliceKey, forged, t0, ErrBadRecord, "signature"},
		"unsigned":             {aliceKey, unsigned, t0, ErrBadRecord, "no proof"},
		"malformed":            {aliceKey, []byte(`{"id":`), t0, ErrBadRecord, "bad document"},
		"empty":                {aliceKey, nil, t0, ErrBadRecord, ""},
		"A's record, B's key":  {ThingKey(bob.id, id), good.Raw, t0, ErrWrongPublisher, "signed by " + alice.id.String() + ", the key names " + bob.id.String()},
		"thing id mismatch":    {ThingKey(alice.id, "urn:other"), good.Raw, t0, ErrWrongThing, `record id "` + id + `"`},
		"tombstone of another": {ThingKey(alice.id, "urn:other"), tomb.Raw, t0, ErrWrongThing, id},
		"oversized":            {aliceKey, oversized, t0, ErrTooLarge, "limit"},
		"expired":              {aliceKey, good.Raw, t0.Add(-time.Hour + MaxRecordAge + time.Second), ErrExpired, "created 2026-11-21T09:00:00Z, 48h0m1s ago"},
		"future-dated":         {aliceKey, good.Raw, t0.Add(-time.Hour - MaxClockSkew - time.Second), ErrFuture, "5m1s ahead"},
		"bad key":              {"/lmos-td/" + alice.id.String() + "/" + "a/b", good.Raw, t0, ErrBadKey, "not escaped canonically"},
		"key of other ns":      {"/pk/" + alice.id.String(), good.Raw, t0, ErrBadKey, "does not start with"},
	} {
		v.Now = fixedClock(c.now)
		err := v.Validate(c.key, c.value)
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%s: Validate: %v", name, err)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: Validate = %v, want %v", name, err, c.err)
		case c.err != nil && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: Validate = %q, want it to mention %q", name, err, c.want)
		}
		if c.err == nil {
			rec, err := v.Check(c.key, c.value)
			if err != nil || !bytes.Equal(rec.Raw, c.value) {
				t.Errorf("%s: Check = %v, %v", name, rec, err)
			}
		}
	}
}

// signWithoutCreated signs doc as SignDocument does but with a proof that
// has no "created" member, which eddsa-jcs-2022 allows.
func signWithoutCreated(t *testing.T, doc []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal(doc, &members); err != nil {
		t.Fatal(err)
	}
	proof := proto.Proof{
		Context:            members["@context"],
		Type:               proto.ProofTypeDataIntegrity,
		Cryptosuite:        proto.CryptosuiteEdDSAJCS2022,
		VerificationMethod: proto.DIDKeyVerificationMethod(key.Public().(ed25519.PublicKey)),
		ProofPurpose:       proto.ProofPurposeAssertionMethod,
	}
	config, err := proof.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	canonicalConfig, err := jcs.Transform(config)
	if err != nil {
		t.Fatal(err)
	}
	canonicalDoc, err := jcs.Transform(doc)
	if err != nil {
		t.Fatal(err)
	}
	configHash, docHash := sha256.Sum256(canonicalConfig), sha256.Sum256(canonicalDoc)
	proof.ProofValue, err = multibase.Encode(multibase.Base58BTC, ed25519.Sign(key, append(configHash[:], docHash[:]...)))
	if err != nil {
		t.Fatal(err)
	}
	rawProof, err := proof.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	members["proof"] = rawProof
	signed, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func TestThingValidatorNeedsCreated(t *testing.T) {
	alice := newPublisher(t)
	doc, err := testTD(t, "urn:x", 1).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	signed := signWithoutCreated(t, doc, alice.key)
	rec, err := proto.ParseRecord(signed)
	if err != nil {
		t.Fatalf("a proof without created does not verify: %v", err)
	}
	if !rec.Signer.Created.IsZero() {
		t.Fatalf("created = %v", rec.Signer.Created)
	}
	v := ThingValidator{Now: fixedClock(t0)}
	err = v.Validate(ThingKey(alice.id, "urn:x"), signed)
	if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), `no "created"`) {
		t.Fatalf("Validate = %v, want ErrBadRecord about the missing created", err)
	}
}

func TestThingValidatorOverrides(t *testing.T) {
	alice := newPublisher(t)
	rec := alice.sign(t, "urn:x", 1, t0)
	key := ThingKey(alice.id, "urn:x")
	short := ThingValidator{Now: fixedClock(t0.Add(2 * time.Hour)), MaxAge: time.Hour}
	if err := short.Validate(key, rec.Raw); !errors.Is(err, ErrExpired) {
		t.Errorf("MaxAge 1h, record 2h old: %v", err)
	}
	strict := ThingValidator{Now: fixedClock(t0.Add(-2 * time.Second)), MaxSkew: time.Second}
	if err := strict.Validate(key, rec.Raw); !errors.Is(err, ErrFuture) {
		t.Errorf("MaxSkew 1s, record 2s ahead: %v", err)
	}
	var zero ThingValidator // system clock
	if err := zero.Validate(key, alice.sign(t, "urn:x", 1, time.Now()).Raw); err != nil {
		t.Errorf("zero ThingValidator refuses a fresh record: %v", err)
	}
}

func TestThingValidatorSelect(t *testing.T) {
	alice, bob := newPublisher(t), newPublisher(t)
	const id = "urn:x"
	key := ThingKey(alice.id, id)
	v := ThingValidator{Now: fixedClock(t0)}

	seq1 := alice.sign(t, id, 1, t0.Add(-3*time.Hour))
	seq2 := alice.sign(t, id, 2, t0.Add(-2*time.Hour))
	seq2Republished := alice.sign(t, id, 2, t0.Add(-time.Hour))
	seq1Late := alice.sign(t, id, 1, t0) // a replay re-signed later: seq still rules
	tomb2 := alice.tombstone(t, id, 2, t0.Add(-2*time.Hour))
	tomb3 := alice.tombstone(t, id, 3, t0.Add(-90*time.Minute))
	seq4 := alice.sign(t, id, 4, t0.Add(-time.Minute)) // published again after removal
	expired9 := alice.sign(t, id, 9, t0.Add(-MaxRecordAge-time.Hour))
	bobs9 := bob.sign(t, id, 9, t0)
	forged9 := bytes.Replace(alice.sign(t, id, 9, t0).Raw, []byte(`"WeatherAgent"`), []byte(`"EvilAgent"`), 1)

	for name, c := range map[string]struct {
		values [][]byte
		want   int
	}{
		"higher seq wins":                 {[][]byte{seq1.Raw, seq2.Raw}, 1},
		"lower seq replay is not chosen":  {[][]byte{seq2.Raw, seq1.Raw}, 0},
		"later-signed replay still loses": {[][]byte{seq1Late.Raw, seq2.Raw}, 1},
		"equal seq, later created wins":   {[][]byte{seq2.Raw, seq2Republished.Raw}, 1},
		"equal seq, later created first":  {[][]byte{seq2Republished.Raw, seq2.Raw}, 0},
		"tombstone beats lower TD":        {[][]byte{seq2.Raw, tomb3.Raw, seq1.Raw}, 1},
		"tombstone beats same-time TD":    {[][]byte{seq2.Raw, tomb2.Raw}, 1},
		"higher TD beats tombstone":       {[][]byte{tomb3.Raw, seq4.Raw}, 1},
		"expired skipped":                 {[][]byte{expired9.Raw, seq1.Raw}, 1},
		"other publisher skipped":         {[][]byte{bobs9.Raw, seq1.Raw}, 1},
		"forged skipped":                  {[][]byte{forged9, seq1.Raw}, 1},
		"garbage skipped":                 {[][]byte{[]byte("x"), nil, seq1.Raw}, 2},
		"one value":                       {[][]byte{seq1.Raw}, 0},
		"duplicates":                      {[][]byte{seq2.Raw, seq2.Raw}, 0},
	} {
		got, err := v.Select(key, c.values)
		if err != nil || got != c.want {
			t.Errorf("%s: Select = %d, %v; want %d", name, got, err, c.want)
		}
	}

	// At equal seq a TD signed after a tombstone is ranked by
	// proto.Record.Newer; Select must agree with it whatever its rule is.
	tdAfterTomb := alice.sign(t, id, 2, t0.Add(-time.Hour))
	want := 0
	if tdAfterTomb.Newer(tomb2) {
		want = 1
	}
	if got, err := v.Select(key, [][]byte{tomb2.Raw, tdAfterTomb.Raw}); err != nil || got != want {
		t.Errorf("tombstone vs later TD at equal seq: Select = %d, %v; Record.Newer says %d", got, err, want)
	}

	for name, values := range map[string][][]byte{
		"none valid": {expired9.Raw, forged9},
		"no values":  nil,
	} {
		if got, err := v.Select(key, values); err == nil {
			t.Errorf("%s: Select = %d, want an error", name, got)
		}
	}
	if _, err := v.Select(key, [][]byte{expired9.Raw}); !errors.Is(err, ErrExpired) {
		t.Errorf("Select of an expired record: %v, want it to wrap ErrExpired", err)
	}
}

// FuzzThingValidator feeds arbitrary keys and values to the validator: it
// must never panic, and what it accepts must be a record of the key's Thing
// by the key's publisher.
func FuzzThingValidator(f *testing.F) {
	alice := newPublisher(f)
	rec := alice.sign(f, "urn:x", 1, t0)
	tomb := alice.tombstone(f, "urn:x", 2, t0)
	key := ThingKey(alice.id, "urn:x")
	f.Add(key, rec.Raw)
	f.Add(key, tomb.Raw)
	f.Add(ThingKey(alice.id, "urn:y"), rec.Raw)
	f.Add(key, []byte(`{"lmos:tombstone":true}`))
	v := ThingValidator{Now: fixedClock(t0)}
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		got, err := v.Check(key, value)
		if err != nil {
			return
		}
		p, id, err := ParseThingKey(key)
		if err != nil || got.Publisher() != p || got.ThingID != id {
			t.Fatalf("accepted %q under %q (%v)", value, key, err)
		}
		if i, err := v.Select(key, [][]byte{[]byte("x"), value}); err != nil || i != 1 {
			t.Fatalf("Select of an accepted value = %d, %v", i, err)
		}
	})
}

func BenchmarkThingValidatorValidate(b *testing.B) {
	alice := newPublisher(b)
	rec := alice.sign(b, "urn:x", 1, t0)
	key := ThingKey(alice.id, "urn:x")
	v := ThingValidator{Now: fixedClock(t0)}
	b.SetBytes(int64(len(rec.Raw)))
	for b.Loop() {
		if err := v.Validate(key, rec.Raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestThingValidatorCheckFrom: CheckFrom checks a record like Check does
// under its own key: the signer must be the publisher named, and the
// record fresh.
func TestThingValidatorCheckFrom(t *testing.T) {
	alice, bob := newPublisher(t), newPublisher(t)
	rec := alice.sign(t, "urn:from", 1, t0)
	v := ThingValidator{Now: fixedClock(t0)}
	got, err := v.CheckFrom(alice.id, rec.Raw)
	if err != nil || got.ThingID != "urn:from" || got.Publisher() != alice.id {
		t.Fatalf("CheckFrom(alice) = %v, %v", got, err)
	}
	for _, c := range []struct {
		name      string
		publisher peer.ID
		value     []byte
		v         ThingValidator
		want      error
	}{
		{"another publisher", bob.id, rec.Raw, v, ErrWrongPublisher},
		{"expired", alice.id, rec.Raw, ThingValidator{Now: fixedClock(t0.Add(MaxRecordAge + time.Minute))}, ErrExpired},
		{"too large", alice.id, make([]byte, proto.MaxRecordSize+1), v, ErrTooLarge},
		{"not a record", alice.id, []byte(`{"id":"urn:from"}`), v, ErrBadRecord},
	} {
		if _, err := c.v.CheckFrom(c.publisher, c.value); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// BenchmarkThingValidatorCached is BenchmarkThingValidatorValidate for a
// record the validator's cache holds: the key and clock checks, and the
// TD parsed again from the bytes (the cache holds no parsed TD).
func BenchmarkThingValidatorCached(b *testing.B) {
	alice := newPublisher(b)
	rec := alice.sign(b, "urn:x", 1, t0)
	key := ThingKey(alice.id, "urn:x")
	v := ThingValidator{Now: fixedClock(t0), Cache: NewRecordCache(0)}
	b.SetBytes(int64(len(rec.Raw)))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(key, rec.Raw); err != nil {
			b.Fatal(err)
		}
	}
}
