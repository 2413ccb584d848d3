package datastore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	pebbleds "github.com/ipfs/go-ds-pebble"

	lmosdht "github.com/lmosnode/lmosnode/dht"
)

// schemaKey holds the layout version of the datastore, so that a future
// release can recognise (and migrate) data written by this one.
var schemaKey = ds.NewKey("/meta/schema")

// lockHeld reports whether err is pebble's refusal of a lock file another
// holds: another process (EWOULDBLOCK from flock) or this one (pebble's
// own check, which has no sentinel).
func lockHeld(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || (err != nil && strings.Contains(err.Error(), "lock held by current process"))
}

// ErrLocked is what Open returns when another process holds the
// datastore: another node runs with the same home.
var ErrLocked = errors.New("datastore is locked by another process")

// schemaVersion is the layout version this release writes and reads.
const schemaVersion = "1"

// diskSlowThreshold is how long a disk operation may take before it is
// logged as slow (pebble's own default).
const diskSlowThreshold = 5 * time.Second

// Store is the node's datastore: the pebble datastore together with the
// disk-health-checking filesystem under it, which must be closed after the
// database. Its writes follow the durability rule of the package
// documentation. It is safe for concurrent use.
//
// Every durable write is synced when it is made, except under DeferSync;
// Sync makes those durable, and leaves soft writes as they are.
//
// Reads and writes after Close fail: pebble panics on a closed database,
// and libp2p stream handlers (a DHT peer's PUT_VALUE, say) can still be
// running when the host has closed and the node closes the datastore.
type Store struct {
	// db serves reads and queries; writes go to pdb, the database under
	// it, so that a durable write is one pebble commit with pebble.Sync
	// (go-ds-pebble would commit without and then write a second WAL
	// record, LogData, to fsync).
	db       *pebbleds.Datastore
	pdb      *pebble.DB
	fsCloser io.Closer
	// ownThings is the key prefix of the node's own Things in the
	// directory.
	ownThings string

	mu     sync.RWMutex
	closed bool

	// syncMu guards owed: a durable write was made under DeferSync and
	// not fsynced yet. Sync holds it across its fsync, so a Sync that
	// finds nothing owed returns only after the fsync that paid it.
	syncMu sync.Mutex
	owed   bool
}

// deferSyncKey marks a context of DeferSync.
type deferSyncKey struct{}

// DeferSync returns ctx marked so that a Store's durable writes made with
// it (Put, Delete, a batch's Commit) return before their fsync; the
// writer makes them durable with a Sync (any key) before it acknowledges
// them. It lets a writer act on a write (apply it, announce it) while
// the fsync runs. Other datastores ignore the mark; by the go-datastore
// contract, a Sync makes their writes durable anyway.
func DeferSync(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferSyncKey{}, true)
}

func syncDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferSyncKey{}).(bool)
	return v
}

// errClosed is the error of every operation after Close.
var errClosed = errors.New("datastore closed")

// open holds off Close until the returned function is called; false after
// Close.
func (d *Store) open() (func(), bool) {
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return nil, false
	}
	return d.mu.RUnlock, true
}

// Get implements ds.Datastore.
func (d *Store) Get(ctx context.Context, key ds.Key) ([]byte, error) {
	done, ok := d.open()
	if !ok {
		return nil, errClosed
	}
	defer done()
	return d.db.Get(ctx, key)
}

// Has implements ds.Datastore.
func (d *Store) Has(ctx context.Context, key ds.Key) (bool, error) {
	done, ok := d.open()
	if !ok {
		return false, errClosed
	}
	defer done()
	return d.db.Has(ctx, key)
}

// GetSize implements ds.Datastore.
func (d *Store) GetSize(ctx context.Context, key ds.Key) (int, error) {
	done, ok := d.open()
	if !ok {
		return -1, errClosed
	}
	defer done()
	return d.db.GetSize(ctx, key)
}

// Query implements ds.Datastore; the results are read under pebble's own
// guard, which Close waits for.
func (d *Store) Query(ctx context.Context, q query.Query) (query.Results, error) {
	done, ok := d.open()
	if !ok {
		return nil, errClosed
	}
	defer done()
	return d.db.Query(ctx, q)
}

// DiskUsage implements ds.PersistentDatastore.
func (d *Store) DiskUsage(ctx context.Context) (uint64, error) {
	done, ok := d.open()
	if !ok {
		return 0, errClosed
	}
	defer done()
	return d.db.DiskUsage(ctx)
}

var (
	_ ds.Batching            = (*Store)(nil)
	_ ds.PersistentDatastore = (*Store)(nil)
)

// Prefixes of the soft classes; see the package documentation.
const (
	softDirectoryPrefix = "/directory/things/"
	softDHTPrefix       = lmosdht.DatastorePrefix + "/"
)

// durable reports whether a write of key must be fsynced before it
// returns.
func (d *Store) durable(key ds.Key) bool {
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
func (d *Store) Put(ctx context.Context, key ds.Key, value []byte) error {
	done, ok := d.open()
	if !ok {
		return errClosed
	}
	defer done()
	durable := d.durable(key)
	if err := d.pdb.Set(key.Bytes(), value, writeOptions(ctx, durable)); err != nil {
		return fmt.Errorf("pebble: put %s: %w", key, err)
	}
	d.deferred(ctx, durable)
	return nil
}

// Delete removes key, fsynced if key is durable.
func (d *Store) Delete(ctx context.Context, key ds.Key) error {
	done, ok := d.open()
	if !ok {
		return errClosed
	}
	defer done()
	durable := d.durable(key)
	if err := d.pdb.Delete(key.Bytes(), writeOptions(ctx, durable)); err != nil {
		return fmt.Errorf("pebble: delete %s: %w", key, err)
	}
	d.deferred(ctx, durable)
	return nil
}

// Sync fsyncs the durable writes made under DeferSync, if any are not
// yet; otherwise it does nothing: durable writes were synced when they
// were made, and soft ones are never synced (see the package
// documentation).
func (d *Store) Sync(ctx context.Context, _ ds.Key) error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	if !d.owed {
		return nil
	}
	done, ok := d.open()
	if !ok {
		return errClosed
	}
	defer done()
	// An empty record written with pebble.Sync fsyncs the write-ahead
	// log, and with it every commit before it.
	if err := d.pdb.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("pebble: sync: %w", err)
	}
	d.owed = false
	return nil
}

// Batch returns a batch whose Commit fsyncs if it wrote a durable key.
func (d *Store) Batch(context.Context) (ds.Batch, error) {
	done, ok := d.open()
	if !ok {
		return nil, errClosed
	}
	defer done()
	return &batch{b: d.pdb.NewBatch(), d: d}, nil
}

// writeOptions are pebble's options for a write: fsynced (in the same
// commit, which pebble's write-ahead log shares with the concurrent
// commits waiting for an fsync) if durable, unless ctx is of DeferSync.
func writeOptions(ctx context.Context, durable bool) *pebble.WriteOptions {
	if durable && !syncDeferred(ctx) {
		return pebble.Sync
	}
	return pebble.NoSync
}

// deferred records that a durable write was committed under DeferSync
// without its fsync, for the next Sync. Called after the commit, so a
// Sync that runs later covers it.
func (d *Store) deferred(ctx context.Context, durable bool) {
	if durable && syncDeferred(ctx) {
		d.syncMu.Lock()
		d.owed = true
		d.syncMu.Unlock()
	}
}

// Pebble returns the database under the Store, for benchmarks that
// compare the node's writes with pebble's own. A write made through it
// bypasses the Store's durability rule.
func (d *Store) Pebble() *pebble.DB { return d.pdb }

// Close closes the database, then its filesystem wrapper; it waits for
// the operations in flight.
func (d *Store) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return errors.Join(d.db.Close(), d.fsCloser.Close())
}

// batch is a pebble batch of a Store that remembers whether it wrote a
// durable key.
type batch struct {
	b       *pebble.Batch
	d       *Store
	durable bool
}

// errCommitted is the error of a batch used after its Commit.
var errCommitted = errors.New("datastore: batch already committed")

func (b *batch) Put(_ context.Context, key ds.Key, value []byte) error {
	if b.b == nil {
		return errCommitted
	}
	b.durable = b.durable || b.d.durable(key)
	return b.b.Set(key.Bytes(), value, nil)
}

func (b *batch) Delete(_ context.Context, key ds.Key) error {
	if b.b == nil {
		return errCommitted
	}
	b.durable = b.durable || b.d.durable(key)
	return b.b.Delete(key.Bytes(), nil)
}

// Commit applies the batch, fsynced in the same commit if it wrote a
// durable key; it fails after Close.
func (b *batch) Commit(ctx context.Context) error {
	if b.b == nil {
		return errCommitted
	}
	done, ok := b.d.open()
	if !ok {
		return errClosed
	}
	defer done()
	// Close recycles the batch's memory.
	err := errors.Join(b.b.Commit(writeOptions(ctx, b.durable)), b.b.Close())
	b.b = nil
	if err != nil {
		return fmt.Errorf("pebble: commit: %w", err)
	}
	b.d.deferred(ctx, b.durable)
	return nil
}

// Open opens (creating if needed) the pebble datastore in cfg.Dir.
//
// Soft writes are committed without an fsync (pebble.NoSync), durable
// ones with one, in the same commit (pebble.Sync; see the package
// documentation).
func Open(deps Deps, cfg Config, opts ...Option) (_ *Store, err error) {
	if deps.Self == "" {
		return nil, errors.New("datastore: Deps.Self is empty")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	dir, log := cfg.Dir, o.log
	// pebble would wrap its FS with disk-health checking itself, but leaks
	// the checker's goroutine when Open fails (e.g. on a locked directory),
	// so the Store owns the wrapper and closes it.
	fs, fsCloser := vfs.WithDiskHealthChecks(vfs.Default, diskSlowThreshold, nil, func(info vfs.DiskSlowInfo) {
		log.Warn("disk slow", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
	})
	// The database holds its own reference to the cache.
	cache := pebble.NewCache(int64(cfg.CacheMB) << 20)
	defer cache.Unref()
	popts := &pebble.Options{Logger: pebbleLogger{log: log}, FS: fs, Cache: cache}
	// A bloom filter in every table (the levels below L0 inherit it) lets a
	// read skip the levels that do not hold its key; without, a read of a
	// record deep in a large store loads a block of every level above it.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	pdb, err := pebble.Open(dir, popts)
	if lockHeld(err) {
		// The errno is kept out of the chain, where it would read as a
		// timeout (syscall.Errno.Timeout).
		return nil, errors.Join(fmt.Errorf("datastore %s: %w: another lmosnode runs with this home; stop it, or give this one another --home (%v)", dir, ErrLocked, err), fsCloser.Close())
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("datastore %s: %w (is another lmosnode running with this home?)", dir, err), fsCloser.Close())
	}
	// go-ds-pebble closes pdb.
	pds, err := pebbleds.NewDatastore(dir, pebbleds.WithPebbleDB(pdb), pebbleds.WithPebbleWriteOptions(pebble.NoSync))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("datastore %s: %w", dir, err), pdb.Close(), fsCloser.Close())
	}
	d := &Store{db: pds, pdb: pdb, fsCloser: fsCloser, ownThings: softDirectoryPrefix + deps.Self.String() + "/"}
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
