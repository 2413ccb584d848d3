package federation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
)

func TestPublishSequence(t *testing.T) {
	m := newMember(t, nil)
	ctx := context.Background()
	id := uniqueID()
	for _, step := range []struct {
		name    string
		do      func() (directory.Entry, directory.Change, error)
		seq     uint64
		change  directory.Change
		removed bool
	}{
		{"first version, no seq given", func() (directory.Entry, directory.Change, error) {
			return m.Publish(ctx, testTD(t, id, 0, "a"), &directory.Local{Backend: "http://127.0.0.1:9/a"})
		}, 1, directory.Created, false},
		{"next version", func() (directory.Entry, directory.Change, error) {
			return m.Publish(ctx, testTD(t, id, 0, "a"), nil)
		}, 2, directory.Updated, false},
		{"seq from the TD when higher", func() (directory.Entry, directory.Change, error) {
			return m.Publish(ctx, testTD(t, id, 10, "a"), nil)
		}, 10, directory.Updated, false},
		{"seq from the TD when lower is raised", func() (directory.Entry, directory.Change, error) {
			return m.Publish(ctx, testTD(t, id, 3, "a"), nil)
		}, 11, directory.Updated, false},
		{"remove", func() (directory.Entry, directory.Change, error) {
			if err := m.Remove(ctx, id); err != nil {
				return directory.Entry{}, 0, err
			}
			e, _ := m.dir.Latest(m.id, id)
			return e, directory.Deleted, nil
		}, 12, directory.Deleted, true},
		{"publish after remove", func() (directory.Entry, directory.Change, error) {
			return m.Publish(ctx, testTD(t, id, 0, "a"), nil)
		}, 13, directory.Created, false},
	} {
		e, change, err := step.do()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if e.Seq != step.seq || change != step.change || e.Tombstone != step.removed {
			t.Fatalf("%s: seq %d, change %s, tombstone %v; want %d, %s, %v", step.name, e.Seq, change, e.Tombstone, step.seq, step.change, step.removed)
		}
	}
	if e, _ := m.dir.Get(m.id, id); e.Local.Backend != "http://127.0.0.1:9/a" {
		t.Errorf("Local was not kept across versions: %+v", e.Local)
	}
}

func TestPublishRefuses(t *testing.T) {
	m := newMember(t, nil)
	ctx := context.Background()
	if _, _, err := m.Publish(ctx, nil, nil); err == nil {
		t.Error("Publish(nil) succeeded")
	}
	td := testTD(t, uniqueID(), 0, "a")
	td.ID = ""
	if _, _, err := m.Publish(ctx, td, nil); err == nil {
		t.Error("Publish of a TD without id succeeded")
	}
	if err := m.Remove(ctx, uniqueID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove of an unknown Thing: %v, want ErrNotFound", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Publish(ctx, testTD(t, uniqueID(), 0, "a"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
}

func TestRepublishResigns(t *testing.T) {
	m := newMember(t, nil)
	ctx := context.Background()
	live, gone := uniqueID(), uniqueID()
	if _, _, err := m.Publish(ctx, testTD(t, live, 0, "a"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Publish(ctx, testTD(t, gone, 0, "a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, gone); err != nil {
		t.Fatal(err)
	}
	before := map[string]directory.Entry{}
	for _, e := range m.dir.OwnRecords() {
		before[e.ThingID] = e
	}

	// Soon after signing, a start-up republication leaves records as
	// they are.
	m.clock.Add(time.Minute)
	m.republish(false)
	for _, e := range m.dir.OwnRecords() {
		if !e.Signed.Equal(before[e.ThingID].Signed) {
			t.Errorf("%s re-signed a minute after signing", e.ThingID)
		}
	}
	// A periodic one re-signs everything, same seq, fresh proof.
	m.clock.Add(time.Hour)
	m.republish(true)
	for _, e := range m.dir.OwnRecords() {
		b := before[e.ThingID]
		if e.Seq != b.Seq || e.Tombstone != b.Tombstone || !e.Signed.After(b.Signed) {
			t.Errorf("%s: seq %d→%d, tombstone %v→%v, signed %s→%s", e.ThingID, b.Seq, e.Seq, b.Tombstone, e.Tombstone, b.Signed, e.Signed)
		}
	}
}

// TestPublishClaimsOrganization: Publish writes Deps.Organization into the
// TD (lmos:organization, under the proof); bound to another organisation,
// the node publishes a new version of its Things with the new claim at
// start (reclaim), and unbound, one without.
func TestPublishClaimsOrganization(t *testing.T) {
	m := newMember(t, func(d *Deps, _ *Config) { d.Organization = "did:web:example.com" })
	ctx := context.Background()
	id := uniqueID()
	bind := func(org string) { // as a restart with another setting would
		m.pubMu.Lock()
		defer m.pubMu.Unlock()
		m.p.Organization = org
	}
	if _, _, err := m.Publish(ctx, testTD(t, id, 0, "a"), nil); err != nil {
		t.Fatal(err)
	}
	claim := func() (string, uint64) {
		t.Helper()
		e, _ := m.dir.Latest(m.id, id)
		rec, err := e.Record()
		if err != nil {
			t.Fatal(err)
		}
		return rec.TD.Organization(), rec.Seq
	}
	if c, seq := claim(); c != "did:web:example.com" || seq != 1 {
		t.Fatalf("published: claim %q seq %d", c, seq)
	}
	m.reclaim()
	if _, seq := claim(); seq != 1 {
		t.Errorf("reclaim with the same organisation published seq %d", seq)
	}
	bind("did:wba:other.example")
	m.reclaim()
	if c, seq := claim(); c != "did:wba:other.example" || seq != 2 {
		t.Errorf("rebound: claim %q seq %d, want the new claim at seq 2", c, seq)
	}
	bind("")
	m.reclaim()
	if c, seq := claim(); c != "" || seq != 3 {
		t.Errorf("unbound: claim %q seq %d, want none at seq 3", c, seq)
	}
}
