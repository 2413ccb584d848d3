package proto

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"
)

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func weatherAgent(t *testing.T) *TD {
	t.Helper()
	raw, err := os.ReadFile("testdata/golden/td/weather-agent.in.json")
	if err != nil {
		t.Fatal(err)
	}
	td, err := ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func TestRecordSignParse(t *testing.T) {
	key := testKey(t)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	td := weatherAgent(t)
	td.Seq = 7
	rec, err := SignThing(td, key, now)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tombstone() || rec.ThingID != td.ID || rec.Seq != 7 {
		t.Fatalf("record = %+v", rec)
	}
	wantPeer, _ := PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if rec.Publisher() != wantPeer {
		t.Fatalf("publisher %s, want %s", rec.Publisher(), wantPeer)
	}
	again, err := ParseRecord(rec.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if again.Seq != 7 || again.TD.Title != td.Title {
		t.Fatalf("reparsed = %+v", again)
	}

	ts, err := SignTombstone(td.ID, 8, key, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ts2, err := ParseRecord(ts.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if !ts2.Tombstone() || ts2.ThingID != td.ID || ts2.Seq != 8 {
		t.Fatalf("tombstone = %+v", ts2)
	}
	if !ts2.Newer(again) || again.Newer(ts2) {
		t.Fatal("tombstone at seq 8 must supersede seq 7")
	}
}

func TestRecordNewerOrder(t *testing.T) {
	key := testKey(t)
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	td := weatherAgent(t)
	sign := func(seq uint64, at time.Time) *Record {
		td.Seq = seq
		r, err := SignThing(td, key, at)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	old, newer, republished := sign(1, t0), sign(2, t0), sign(2, t0.Add(time.Hour))
	for _, c := range []struct {
		a, b *Record
		want bool
	}{
		{newer, old, true}, {old, newer, false},
		{republished, newer, true}, {newer, republished, false},
		{old, nil, true}, {old, old, false},
	} {
		if got := c.a.Newer(c.b); got != c.want {
			t.Errorf("Newer(seq %d, seq %v) = %v, want %v", c.a.Seq, c.b, got, c.want)
		}
	}
}

func TestParseRecordRejects(t *testing.T) {
	key := testKey(t)
	now := time.Now()
	td := weatherAgent(t)
	rec, err := SignThing(td, key, now)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := SignTombstone(td.ID, 3, key, now)
	if err != nil {
		t.Fatal(err)
	}
	noID := td.Clone()
	noID.ID = ""
	if _, err := SignThing(noID, key, now); err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("SignThing without id: %v", err)
	}
	unsignedTD, _ := td.MarshalJSON()
	for name, c := range map[string]struct {
		raw  string
		want string
	}{
		"unsigned":          {string(unsignedTD), "no proof"},
		"changed title":     {strings.Replace(string(rec.Raw), td.Title, td.Title+"!", 1), "signature"},
		"changed tombstone": {strings.Replace(string(ts.Raw), `"lmos:seq":3`, `"lmos:seq":4`, 1), "signature"},
		"oversized":         {strings.Repeat(" ", MaxRecordSize+1), "exceeds"},
		"not json":          {"{", "bad document"},
	} {
		_, err := ParseRecord([]byte(c.raw))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
		}
	}
	// A signed document that is neither a valid TD nor a tombstone.
	bogus, err := SignDocument([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:x"}`), key, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRecord(bogus); err == nil {
		t.Error("signed non-TD accepted")
	}
	extra, err := SignDocument([]byte(`{"id":"urn:x","lmos:tombstone":true,"lmos:seq":1,"title":"smuggled"}`), key, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRecord(extra); err == nil {
		t.Error("tombstone with unknown members accepted")
	}
	// Peers refuse ids over MaxIDLength in TDs and tombstones alike, even
	// when the signature verifies.
	longID := "urn:" + strings.Repeat("x", MaxIDLength)
	if _, err := SignTombstone(longID, 1, key, now); err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("SignTombstone with a long id: %v", err)
	}
	longTomb, err := SignDocument([]byte(`{"@context":`+string(LMOSContext())+`,"id":"`+longID+`","lmos:tombstone":true,"lmos:seq":1}`), key, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRecord(longTomb); err == nil || !strings.Contains(err.Error(), "allowed") {
		t.Errorf("tombstone with a long id: %v", err)
	}
	longTD := td.Clone()
	longTD.ID = longID
	unsignedLong, _ := longTD.MarshalJSON()
	signedLong, err := SignDocument(unsignedLong, key, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRecord(signedLong); err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("TD with a long id: %v", err)
	}
}

// A delete is final for its sequence number: a TD re-signed later at the
// same seq (a republish timer racing the delete) does not resurrect it.
func TestRecordTombstoneFinalForSeq(t *testing.T) {
	key := testKey(t)
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	td := weatherAgent(t)
	td.Seq = 5
	ts, err := SignTombstone(td.ID, 5, key, t0)
	if err != nil {
		t.Fatal(err)
	}
	later, err := SignThing(td, key, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if later.Newer(ts) || !ts.Newer(later) {
		t.Fatal("a TD at the tombstone's seq must not supersede it")
	}
}
