package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	pebbleds "github.com/ipfs/go-ds-pebble"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
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
// Writes fall into two classes. Soft state, which the network gives back
// when it is lost, is written without an fsync: the Things learned from
// other publishers (directory keys /directory/things/<peer ID>/… of any
// peer but the node itself; they expire unless seen again, and sync on
// connect, gossip and the DHT bring them back) and the DHT's records
// (/dht/…; their publishers republish them, and each is held by several
// peers). Everything else (the node's own Things, the layout version,
// whatever another component writes) is durable: the write is fsynced
// before it returns, so a node killed with SIGKILL right after
// acknowledging it still has it on restart. An fsync costs milliseconds on
// most disks, and a gossiped Thing is stored, in the gossipsub validator,
// on every hop before it is forwarded, so soft writes are what keeps a
// publication's propagation at network speed.
//
// Because every durable write is synced when it is made, Sync has nothing
// left to do: the writes it could still make durable are soft ones.
//
// Reads and writes after Close fail with errDatastoreClosed: pebble panics
// on a closed database, and libp2p stream handlers (a DHT peer's PUT_VALUE,
// say) can still be running when the host has closed and the node closes
// the datastore.
type datastore struct {
	*pebbleds.Datastore
	fsCloser io.Closer
	// ownThings is the key prefix of the node's own Things in the
	// directory.
	ownThings string

	mu     sync.RWMutex
	closed bool
}

// errDatastoreClosed is the error of every operation after Close.
var errDatastoreClosed = errors.New("datastore closed")

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

var _ ds.Batching = (*datastore)(nil)

// Prefixes of the soft classes; see datastore.
const (
	softDirectoryPrefix = "/directory/things/"
	softDHTPrefix       = lmosdht.DatastorePrefix + "/"
)

// durable reports whether a write of key must be fsynced before it
// returns.
func (d *datastore) durable(key ds.Key) bool {
	k := key.String()
	switch {
	case strings.HasPrefix(k, softDHTPrefix):
		return false
	case strings.HasPrefix(k, softDirectoryPrefix):
		return strings.HasPrefix(k, d.ownThings)
	}
	return true
}

// Put writes value under key, fsynced if key is durable.
func (d *datastore) Put(ctx context.Context, key ds.Key, value []byte) error {
	done, ok := d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	if err := d.Datastore.Put(ctx, key, value); err != nil {
		return err
	}
	return d.syncIf(ctx, d.durable(key))
}

// Delete removes key, fsynced if key is durable.
func (d *datastore) Delete(ctx context.Context, key ds.Key) error {
	done, ok := d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	if err := d.Datastore.Delete(ctx, key); err != nil {
		return err
	}
	return d.syncIf(ctx, d.durable(key))
}

// Sync does nothing: durable writes were synced when they were made, and
// soft ones are never synced (see datastore).
func (d *datastore) Sync(context.Context, ds.Key) error { return nil }

// Batch returns a batch whose Commit fsyncs if it wrote a durable key.
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
	return &batch{Batch: b, d: d}, nil
}

// syncIf fsyncs pebble's write-ahead log, and with it every write made so
// far, if durable.
func (d *datastore) syncIf(ctx context.Context, durable bool) error {
	if !durable {
		return nil
	}
	return d.Datastore.Sync(ctx, ds.NewKey("/"))
}

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

// batch is a batch of datastore that remembers whether it wrote a durable
// key.
type batch struct {
	ds.Batch
	d       *datastore
	durable bool
}

func (b *batch) Put(ctx context.Context, key ds.Key, value []byte) error {
	b.durable = b.durable || b.d.durable(key)
	return b.Batch.Put(ctx, key, value)
}

func (b *batch) Delete(ctx context.Context, key ds.Key) error {
	b.durable = b.durable || b.d.durable(key)
	return b.Batch.Delete(ctx, key)
}

// Commit applies the batch, fsynced if it wrote a durable key; it fails
// after Close.
func (b *batch) Commit(ctx context.Context) error {
	done, ok := b.d.open()
	if !ok {
		return errDatastoreClosed
	}
	defer done()
	if err := b.Batch.Commit(ctx); err != nil {
		return err
	}
	return b.d.syncIf(ctx, b.durable)
}

// openDatastore opens (creating if needed) the pebble datastore at dir.
//
// pebble writes without an fsync (pebble.NoSync, go-ds-pebble's default);
// the datastore fsyncs its durable writes itself (see datastore). self is
// the node's peer ID, the publisher of its own Things.
func openDatastore(dir string, cacheMB int, self peer.ID, log *slog.Logger) (_ *datastore, err error) {
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
		pebbleds.WithPebbleWriteOptions(pebble.NoSync),
	)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("datastore %s: %w (is another lmosnode running with this home?)", dir, err), fsCloser.Close())
	}
	d := &datastore{Datastore: pds, fsCloser: fsCloser, ownThings: softDirectoryPrefix + self.String() + "/"}
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
