package dht

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestThingValidatorRetired: every record of a retired key is refused,
// whatever its date, on every path (Check by key, CheckFrom, Select);
// another publisher's are not.
func TestThingValidatorRetired(t *testing.T) {
	gone, other := newPublisher(t), newPublisher(t)
	now := time.Now()
	v := ThingValidator{Retired: func(p peer.ID) error {
		if p == gone.id {
			return errors.New("revoked")
		}
		return nil
	}}
	thing := uniqueThing(t)
	old := gone.sign(t, thing, 1, now.Add(-time.Hour))
	if _, err := v.Check(ThingKey(gone.id, thing), old.Raw); !errors.Is(err, ErrRetiredKey) {
		t.Fatalf("Check: %v", err)
	}
	if _, err := v.CheckFrom(gone.id, old.Raw); !errors.Is(err, ErrRetiredKey) {
		t.Fatalf("CheckFrom: %v", err)
	}
	if _, err := v.Select(ThingKey(gone.id, thing), [][]byte{old.Raw}); !errors.Is(err, ErrRetiredKey) {
		t.Fatalf("Select: %v", err)
	}
	fine := other.sign(t, thing, 1, now)
	if _, err := v.Check(ThingKey(other.id, thing), fine.Raw); err != nil {
		t.Fatalf("another publisher: %v", err)
	}
}
