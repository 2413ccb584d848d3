package directory

import (
	"fmt"
	"strings"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestWriteChunked: a write of more than maxBatchBytes commits several
// datastore batches of at most that, and stores every record.
func TestWriteChunked(t *testing.T) {
	ds := &countingStore{Batching: memStore()}
	d := open(t, ds, newPublisher(t, 1).id, newClock(), Config{})
	pub := newPublisher(t, 2)
	recs := make([]*lmosproto.Record, 0, 40)
	for i := range 40 {
		recs = append(recs, pub.unsigned(t, thingSpec{id: fmt.Sprintf("urn:chunk:%d", i), description: strings.Repeat("s", 60_000), seq: 1}.td(t), t0))
	}
	before := ds.commits.Load()
	if _, err := d.PutMany(recs); err != nil {
		t.Fatal(err)
	}
	if n, min := ds.commits.Load()-before, int32(40*60_000/maxBatchBytes); n < min {
		t.Fatalf("%d batches committed for %d bytes, want at least %d", n, 40*60_000, min)
	}
	if n := d.Len(); n != 40 {
		t.Fatalf("%d Things held, want 40", n)
	}
}
