package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	ds "github.com/ipfs/go-datastore"
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
type datastore struct {
	*pebbleds.Datastore
	fsCloser io.Closer
}

// Close closes the database, then its filesystem wrapper.
func (d *datastore) Close() error {
	return errors.Join(d.Datastore.Close(), d.fsCloser.Close())
}

// Sync does nothing: every write was synced to the WAL before it returned
// (pebble.Sync), so no earlier write is left to make durable. go-ds-pebble's
// Sync writes and fsyncs one more WAL record, which doubled the fsyncs of
// every directory write (commit, then Sync).
func (d *datastore) Sync(context.Context, ds.Key) error { return nil }

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
