package proto

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"
)

func TestKeyRotation(t *testing.T) {
	old, successor, other := testKey(t), testKey(t), testKey(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rot, err := SignRotation(old, successor, now)
	if err != nil {
		t.Fatal(err)
	}
	oldID, _ := PeerIDFromEd25519(old.Public().(ed25519.PublicKey))
	newID, _ := PeerIDFromEd25519(successor.Public().(ed25519.PublicKey))
	if rot.Key != oldID || rot.Successor != newID || !rot.Created.Equal(now) || rot.Revocation() {
		t.Fatalf("rotation = %+v", rot)
	}
	again, err := ParseKeyRecord(rot.Raw)
	if err != nil || again.Successor != newID {
		t.Fatalf("parse again: %v %+v", err, again)
	}

	// A successor that did not sign: the second proof is another key's.
	forged, err := SignRotation(old, other, now)
	if err != nil {
		t.Fatal(err)
	}
	mixed := bytes.Replace(forged.Raw, []byte(DIDKey(other.Public().(ed25519.PublicKey))+`"`), []byte(DIDKey(successor.Public().(ed25519.PublicKey))+`"`), 1)
	if _, err := ParseKeyRecord(mixed); !errors.Is(err, ErrBadKeyRecord) {
		t.Fatalf("rotation with a successor that did not sign: %v", err)
	}
	// One proof only.
	single, err := SignDocument([]byte(`{"type":"lmos:KeyRotation","key":"`+DIDKey(old.Public().(ed25519.PublicKey))+`","successor":"`+DIDKey(successor.Public().(ed25519.PublicKey))+`"}`), old, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseKeyRecord(single); !errors.Is(err, ErrBadKeyRecord) {
		t.Fatalf("rotation with one proof: %v", err)
	}
}

func TestKeyRevocation(t *testing.T) {
	old, successor, other := testKey(t), testKey(t), testKey(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	oldID, _ := PeerIDFromEd25519(old.Public().(ed25519.PublicKey))

	self, err := SignRevocation(old, nil, "leaked", now)
	if err != nil {
		t.Fatal(err)
	}
	if self.Key != oldID || !self.Revocation() || self.Reason != "leaked" {
		t.Fatalf("revocation = %+v", self)
	}
	rot, err := SignRotation(old, successor, now)
	if err != nil {
		t.Fatal(err)
	}
	bySuccessor, err := SignRevocation(successor, rot, "", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if bySuccessor.Key != oldID || bySuccessor.Rotation == nil {
		t.Fatalf("revocation by the successor = %+v", bySuccessor)
	}
	// Another key than the successor cannot revoke through the rotation.
	if _, err := SignRevocation(other, rot, "", now); !errors.Is(err, ErrBadKeyRecord) {
		t.Fatalf("revocation by a stranger: %v", err)
	}
	if _, err := SignRevocation(old, self, "", now); err == nil {
		t.Fatal("a revocation embedded as the rotation was accepted")
	}
	long := string(bytes.Repeat([]byte("x"), MaxRevocationReason+1))
	if _, err := SignRevocation(old, nil, long, now); !errors.Is(err, ErrBadKeyRecord) {
		t.Fatalf("long reason: %v", err)
	}
	if _, err := ParseKeyRecord(append(self.Raw[:len(self.Raw)-1:len(self.Raw)-1], []byte(`,"x":1}`)...)); err == nil {
		t.Fatal("a record with a trailing member after the proof was accepted")
	}
}

func FuzzParseKeyRecord(f *testing.F) {
	old, successor := testKey(f), testKey(f)
	rot, err := SignRotation(old, successor, time.Now())
	if err != nil {
		f.Fatal(err)
	}
	rev, err := SignRevocation(successor, rot, "r", time.Now())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rot.Raw)
	f.Add(rev.Raw)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := ParseKeyRecord(raw)
		if err != nil {
			return
		}
		if rec.Key == "" || rec.Created.IsZero() {
			t.Fatalf("accepted record without key or time: %+v", rec)
		}
	})
}
