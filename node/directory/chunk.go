package directory

import (
	"context"

	datastore "github.com/ipfs/go-datastore"
)

// maxBatchBytes bounds the bytes of one datastore batch: a write of more
// commits several. Pebble keeps a batch larger than half its memtable as
// a memtable of its own until it is flushed, in Go memory: a gossip burst
// of a thousand 60 KB records written as one 64 MiB batch held as much
// again as the directory's records (issue 24's sybil lab). Learned
// records are soft state: committing them in several batches, made
// durable by one Sync, changes nothing a crash could tell.
const maxBatchBytes = 1 << 20

// chunkedBatch is a datastore.Batch that commits every maxBatchBytes of
// values and starts a new batch.
type chunkedBatch struct {
	ds   datastore.Batching
	cur  datastore.Batch
	size int
	// written is set once a chunk was committed.
	written bool
}

func newChunkedBatch(ctx context.Context, ds datastore.Batching) (*chunkedBatch, error) {
	b, err := ds.Batch(ctx)
	if err != nil {
		return nil, err
	}
	return &chunkedBatch{ds: ds, cur: b}, nil
}

// Put adds a value, first committing the batch so far if the value would
// take it over maxBatchBytes.
func (c *chunkedBatch) Put(ctx context.Context, key datastore.Key, value []byte) error {
	if c.size > 0 && c.size+len(value) > maxBatchBytes {
		if err := c.cur.Commit(ctx); err != nil {
			return err
		}
		c.written = true
		b, err := c.ds.Batch(ctx)
		if err != nil {
			return err
		}
		c.cur, c.size = b, 0
	}
	c.size += len(value)
	return c.cur.Put(ctx, key, value)
}

// Delete adds a deletion.
func (c *chunkedBatch) Delete(ctx context.Context, key datastore.Key) error {
	return c.cur.Delete(ctx, key)
}

// Commit commits what the last chunk holds.
func (c *chunkedBatch) Commit(ctx context.Context) error {
	return c.cur.Commit(ctx)
}
