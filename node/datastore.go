package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	pebbleds "github.com/ipfs/go-ds-pebble"
)

// The node's datastore is one pebble database under home/datastore, used
// through the go-datastore interface. Components keep their data under their
// own key prefix:
//
//	/meta/schema   layout version of this datastore (written on first open)
//	/dht/…         DHT records this node stores for the network
//	/things/own/…  Things this node publishes (authoritative)
//	/things/cache/… Things learned from other nodes (with expiry)
//	/groups/…      group operation logs
//
// Only /meta is used in this release; the others are reserved for the
// components that arrive next.

// schemaKey holds the layout version of the datastore, so that a future
// release can recognise (and migrate) data written by this one.
var schemaKey = ds.NewKey("/meta/schema")

// schemaVersion is the layout version this release writes and reads.
const schemaVersion = "1"

// diskSlowThreshold is how long a disk operation may take before it is
// logged as slow (pebble's own default).
const diskSlowThreshold = 5 * time.Second

// datastore is the pebble datastore together with the disk-health-checking
// filesystem under it, which must be closed after the database.
//
// Reads and writes after Close fail with errDatastoreClosed: pebble panics
// on a closed database, and libp2p stream handlers (a DHT peer's PUT_VALUE,
// say) can still be running when the host has closed and the node closes
// the datastore.
type datastore struct {
	*pebbleds.Datastore
	fsCloser io.Closer

	mu     sync.RWMutex
	closed bool
}

// errDatastoreClosed is the error of every operation after Close.
var errDatastoreClosed = errors.New("datastore closed")

// Close closes the database, then its filesystem wrapper; it waits for
// the operations in flight.
func (d *datastore) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return errors.Join(d.Datastore.Close(), d.fsCloser.Close())
}

// open holds off Close until the returned function is called; false after
// Close.
func (d *datastore) open() (func(), bool) {
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return nil, false
	}
	return d.mu.RUnlock, true
}

// Get implements ds.Datastore.
func (d *datastore) Get(ctx context.Context, key ds.Key) ([]byte, error) {
	done, ok := d.open()
	if !ok {
		return nil, errDatastoreClosed
	}
	defer done()
	return d.Datastore.Get(ctx, key)
}

// Has implements ds.Datastore.
func (d *datastore) Has(ctx context.Context, key ds.Key) (bool, error) {
	done, ok := d.open()
	if !ok {
		return false, errDatastoreClosed
	}
	defer done()
	return d.Datastore.Has(ctx, key)
}

// GetSize implements ds.Datastore.
func (d *datastore) GetSize(ctx context.Context, key ds.Key) (int, error) {
	done, ok := d.open()
	if !ok {
		return -1, errDatastoreClosed
	}
	defer done()
	return d.Datastore.GetSize(ctx, key)
}

// Query implements ds.Datastore; the results are read under pebble's own
// guard, which Close waits for.
func (d *datastore) Query(ctx context.Context, q query.Query) (query.Results, error) {
	done, ok := d.open()
	if !ok {
		return nil, errDatastoreClosed
	}
	defer done()
	return d.Datastore.Query(ctx, q)
}

// Put implements ds.Datastore.
func (d *datastore) Put(ctx context.Context, key ds.Key, value []byte) error {
	done, ok := d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	return d.Datastore.Put(ctx, key, value)
}

// Delete implements ds.Datastore.
func (d *datastore) Delete(ctx context.Context, key ds.Key) error {
	done, ok := d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	return d.Datastore.Delete(ctx, key)
}

// Sync implements ds.Datastore.
func (d *datastore) Sync(ctx context.Context, key ds.Key) error {
	done, ok := d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	return d.Datastore.Sync(ctx, key)
}

// Batch implements ds.Batching; the batch's Commit is guarded too.
func (d *datastore) Batch(ctx context.Context) (ds.Batch, error) {
	done, ok := d.open()
	if !ok {
		return nil, errDatastoreClosed
	}
	defer done()
	b, err := d.Datastore.Batch(ctx)
	if err != nil {
		return nil, err
	}
	return &guardedBatch{Batch: b, d: d}, nil
}

// guardedBatch is a batch of datastore whose Commit fails after Close.
type guardedBatch struct {
	ds.Batch
	d *datastore
}

// Commit implements ds.Batch.
func (b *guardedBatch) Commit(ctx context.Context) error {
	done, ok := b.d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	return b.Batch.Commit(ctx)
}

// openDatastore opens (creating if needed) the pebble datastore at dir.
//
// Every write is synced to the WAL before it returns (pebble.Sync): a node
// killed with SIGKILL right after acknowledging a write still has it on
// restart. go-ds-pebble's default is NoSync, which keeps writes in the OS
// page cache only.
func openDatastore(dir string, cacheMB int, log *slog.Logger) (_ *datastore, err error) {
	// pebble would wrap its FS with disk-health checking itself, but leaks
	// the checker's goroutine when Open fails (e.g. on a locked directory),
	// so the node owns the wrapper and closes it.
	fs, fsCloser := vfs.WithDiskHealthChecks(vfs.Default, diskSlowThreshold, nil, func(info vfs.DiskSlowInfo) {
		log.Warn("disk slow", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
	})
	opts := &pebble.Options{Logger: pebbleLogger{log: log}, FS: fs}
	pds, err := pebbleds.NewDatastore(dir,
		pebbleds.WithPebbleOpts(opts),
		pebbleds.WithCacheSize(int64(cacheMB)<<20),
		pebbleds.WithPebbleWriteOptions(pebble.Sync),
	)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("datastore %s: %w (is another lmosnode running with this home?)", dir, err), fsCloser.Close())
	}
	d := &datastore{Datastore: pds, fsCloser: fsCloser}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	ctx := context.Background()
	v, err := d.Get(ctx, schemaKey)
	switch {
	case errors.Is(err, ds.ErrNotFound):
		if err := d.Put(ctx, schemaKey, []byte(schemaVersion)); err != nil {
			return nil, fmt.Errorf("datastore %s: write %s: %w", dir, schemaKey, err)
		}
	case err != nil:
		return nil, fmt.Errorf("datastore %s: read %s: %w", dir, schemaKey, err)
	case string(v) != schemaVersion:
		return nil, fmt.Errorf("datastore %s: layout version %q, this lmosnode reads %q", dir, v, schemaVersion)
	}
	return d, nil
}
