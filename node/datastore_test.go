package node

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	ds "github.com/ipfs/go-datastore"
)

// BenchmarkDatastoreWrite measures one durable write as the directory makes
// it on the node's datastore: a batch of one value (the size of a stored
// Thing), committed, then Sync.
func BenchmarkDatastoreWrite(b *testing.B) {
	d, err := openDatastore(b.TempDir(), 8, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	val := make([]byte, 3500)
	i := 0
	for b.Loop() {
		i++
		batch, err := d.Batch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := batch.Put(ctx, ds.NewKey(fmt.Sprintf("/bench/%d", i)), val); err != nil {
			b.Fatal(err)
		}
		if err := batch.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(ctx, ds.NewKey("/bench")); err != nil {
			b.Fatal(err)
		}
	}
}
