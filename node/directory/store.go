package directory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/Masterminds/semver/v3"
	datastore "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"

	lru "github.com/hashicorp/golang-lru/v2"

	lmosdatastore "github.com/lmosnode/lmosnode/node/datastore"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Change is what a Put did.
type Change int

const (
	// Unchanged: the record held was seen again; only its expiry (and an own
	// Thing's Local, if given) was refreshed.
	Unchanged Change = iota
	// Created: the Thing was not held, or held as a tombstone.
	Created
	// Updated: a newer version replaced the Thing.
	Updated
	// Deleted: a tombstone was stored (replacing the Thing if it was held).
	Deleted
	// Stale: the record is older than the one held and was refused.
	Stale
	// OverQuota: the learned record would take its publisher over its
	// quota (Config.MaxThingsPerPublisher, MaxBytesPerPublisher) and was
	// refused.
	OverQuota
	// OverBudget: the learned record does not fit in the node's budget
	// for learned records (Config.MaxLearnedBytes) without evicting Things
	// valued as much or more, and was refused.
	OverBudget
)

func (c Change) String() string {
	switch c {
	case Unchanged:
		return "unchanged"
	case Created:
		return "created"
	case Updated:
		return "updated"
	case Deleted:
		return "deleted"
	case Stale:
		return "stale"
	case OverQuota:
		return "over quota"
	case OverBudget:
		return "over budget"
	}
	return fmt.Sprintf("Change(%d)", int(c))
}

var (
	// ErrStale is returned by Put for a record that is not newer than the
	// one held for its (publisher, id).
	ErrStale = errors.New("not newer than the record held")
	// ErrClosed is returned by a Directory after Close.
	ErrClosed = errors.New("directory: closed")
)

// liveMarker stands in for the TD of a held record when comparing versions:
// proto.Record.Newer only asks whether a record is a tombstone.
var liveMarker = &lmosproto.TD{}

// maxVersionCache bounds the cache of parsed capability versions.
const maxVersionCache = 4096

// detailCacheSize bounds the cache of entries' details read from the
// datastore: the pages of the popular queries (at ~200 bytes each, at
// most ~7 MB).
const detailCacheSize = 32768

// A Directory is a node's persistent directory of Things. See the package
// documentation for its rules, storage layout and concurrency.
type Directory struct {
	ds   datastore.Batching
	self peer.ID
	cfg  Config
	now  func() time.Time
	log  *slog.Logger
	seed maphash.Seed

	// wmu serialises writers and guards closed. A writer holding wmu may
	// read the state below without mu: only writers change it.
	wmu    sync.Mutex
	closed bool
	// qmu guards queue, the puts waiting for a writer (put).
	qmu   sync.Mutex
	queue []*putReq

	versionsMu sync.Mutex
	versions   map[string]*semver.Version

	// keysMu guards keyPrefixes, the cached datastore key prefix of each
	// publisher (thingKey).
	keysMu      sync.Mutex
	keyPrefixes map[peer.ID]string

	// mu guards the in-memory state.
	mu   sync.RWMutex
	byID idMap // every entry, by thing id
	// learned is the bytes of the learned records held (Config.MaxLearnedBytes).
	learned int64
	own     map[string]*thing     // the node's own entries, by thing id
	pubs    map[peer.ID]*pubState // per publisher of learned entries
	// pubTab holds each pubState at its place (nil at pubOwn and at free
	// places, listed in pubFree).
	pubTab  []*pubState
	pubFree []uint32
	idx     index

	events      *events
	constraints constraintCache
	// cache holds the details of recently shown entries (Directory.details).
	cache *lru.Cache[*thing, *details]

	valuer  atomic.Pointer[Valuer]
	onEvict atomic.Pointer[func([]Entry)]

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Open loads the directory kept in deps.Datastore and starts its purge
// loop. The caller keeps ownership of the datastore and closes it after
// Close.
func Open(deps Deps, cfg Config, opts ...Option) (*Directory, error) {
	if deps.Datastore == nil {
		return nil, errors.New("directory: Deps.Datastore is nil")
	}
	if err := deps.Self.Validate(); err != nil {
		return nil, fmt.Errorf("directory: Deps.Self: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	seed := maphash.MakeSeed()
	d := &Directory{
		ds:          deps.Datastore,
		self:        deps.Self,
		cfg:         cfg,
		now:         o.now,
		log:         o.log,
		seed:        seed,
		versions:    make(map[string]*semver.Version),
		keyPrefixes: make(map[peer.ID]string),
		byID:        newIDMap(seed),
		own:         make(map[string]*thing),
		pubs:        make(map[peer.ID]*pubState),
		idx:         newIndex(),
		events:      newEvents(cfg.EventHistory, cfg.SubscriberBuffer),
		done:        make(chan struct{}),
	}
	cache, err := lru.New[*thing, *details](detailCacheSize)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	d.cache = cache
	if err := d.checkLayout(); err != nil {
		return nil, err
	}
	if err := d.load(); err != nil {
		return nil, err
	}
	d.idx.compact() // no reader yet
	if err := d.trim(); err != nil {
		return nil, fmt.Errorf("directory: budget: %w", err)
	}
	d.wg.Go(d.purgeLoop)
	return d, nil
}

// Close stops the purge loop and ends every event subscription. It does not
// close the datastore. Close is idempotent.
func (d *Directory) Close() error {
	d.closeOnce.Do(func() {
		close(d.done)
		d.wg.Wait()
		d.wmu.Lock()
		d.closed = true
		d.wmu.Unlock()
		d.events.close()
	})
	return nil
}

// BeginRun marks durably (one fsync) that a writer that may act on own
// records before Put has made them durable is running — the federation,
// which announces a new version while its write is in flight — and
// reports whether the previous such run never reached EndRun: it ended
// in a crash, a kill -9 or a power loss, so a record it had acted on may
// be missing here although others hold it. The federation calls it once
// per run, before its first such publication, and EndRun when it closes.
func (d *Directory) BeginRun() (unclean bool, err error) {
	ctx := context.Background()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.closed {
		return false, ErrClosed
	}
	had, err := d.ds.Has(ctx, keyRun)
	if err != nil {
		return false, fmt.Errorf("directory: begin run: %w", err)
	}
	if !had {
		if err := d.ds.Put(ctx, keyRun, []byte{1}); err != nil {
			return false, fmt.Errorf("directory: begin run: %w", err)
		}
	}
	// Sync either way: the marker must be durable before the run acts.
	if err := d.ds.Sync(ctx, keyRun); err != nil {
		return false, fmt.Errorf("directory: begin run: %w", err)
	}
	return had, nil
}

// EndRun marks durably that the run BeginRun began ended with every
// record it acted on stored.
func (d *Directory) EndRun() error {
	ctx := context.Background()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.ds.Delete(ctx, keyRun); err != nil {
		return fmt.Errorf("directory: end run: %w", err)
	}
	if err := d.ds.Sync(ctx, keyRun); err != nil {
		return fmt.Errorf("directory: end run: %w", err)
	}
	return nil
}

// checkLayout refuses a datastore written in another layout and marks a new
// one.
func (d *Directory) checkLayout() error {
	ctx := context.Background()
	v, err := d.ds.Get(ctx, keyVersion)
	switch {
	case errors.Is(err, datastore.ErrNotFound):
		if err := d.ds.Put(ctx, keyVersion, []byte(layoutVersion)); err != nil {
			return fmt.Errorf("directory: %s: %w", keyVersion, err)
		}
		if err := d.ds.Sync(ctx, keyVersion); err != nil {
			return fmt.Errorf("directory: %s: %w", keyVersion, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("directory: %s: %w", keyVersion, err)
	case string(v) != layoutVersion:
		return fmt.Errorf("directory: %s: layout %q, this node reads %q", keyVersion, v, layoutVersion)
	}
	return nil
}

// load reads every stored entry into memory. Entries are decoded by one
// worker per CPU and indexed in the calling goroutine; every goroutine
// ends before load returns. An entry that cannot be decoded is logged and
// left in the datastore: never lose data.
func (d *Directory) load() (err error) {
	ctx := context.Background()
	res, err := d.ds.Query(ctx, query.Query{Prefix: keyThings.String()})
	if err != nil {
		return fmt.Errorf("directory: load: %w", err)
	}
	defer func() {
		if cerr := res.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("directory: load: %w", cerr))
		}
	}()
	now := d.now()

	type decoded struct {
		t   *thing
		det *details
		tf  []termFreq
	}
	in := make(chan query.Result, 256)
	out := make(chan decoded, 256)
	var feedErr error
	var feeder, workers sync.WaitGroup
	feeder.Go(func() {
		defer close(in)
		for r := range res.Next() {
			if r.Error != nil {
				feedErr = r.Error
				return
			}
			in <- r
		}
	})
	for range max(1, runtime.GOMAXPROCS(0)) {
		workers.Go(func() {
			for r := range in {
				if t, det, tf, ok := d.decodeStored(r, now); ok {
					out <- decoded{t, det, tf}
				}
			}
		})
	}
	feeder.Go(func() {
		workers.Wait()
		close(out)
	})
	d.mu.Lock()
	for x := range out {
		d.insert(x.t, x.det, x.tf)
	}
	d.mu.Unlock()
	feeder.Wait()
	if feedErr != nil {
		return fmt.Errorf("directory: load: %w", feedErr)
	}
	return nil
}

// decodeStored builds the entry of one stored envelope; false (logged) for
// one that cannot be decoded.
func (d *Directory) decodeStored(r query.Result, now time.Time) (*thing, *details, []termFreq, bool) {
	pub, id, err := parseThingKey(datastore.RawKey(r.Key))
	if err != nil {
		d.log.Warn("directory: skipping stored entry", "key", r.Key, "error", err)
		return nil, nil, nil, false
	}
	env, err := unmarshalEnvelope(r.Value)
	if err == nil && env.ThingID != id {
		err = fmt.Errorf("envelope names thing %q", env.ThingID)
	}
	if err != nil {
		d.log.Warn("directory: skipping stored entry", "key", r.Key, "publisher", pub, "thing", id, "error", err)
		return nil, nil, nil, false
	}
	t, det, tf := d.makeThing(pub, &env, d.recordHash(env.Raw))
	if !t.own && t.expires == 0 {
		// Stored as own under another node identity: now it is a learned
		// Thing like any other, and expires unless seen again.
		t.expires = unixSec(now.Add(d.cfg.TTL))
		t.withLocal(Local{})
	}
	return t, det, tf, true
}

// makeThing builds the in-memory form of an envelope, the details it is
// indexed by and the term frequencies to index it with (nil for a
// tombstone).
func (d *Directory) makeThing(pub peer.ID, env *envelope, hash uint32) (*thing, *details, []termFreq) {
	t := d.baseThing(pub, env, hash)
	if t.tombstone {
		return t, nil, nil
	}
	det, tf := d.indexed(t, &env.Summary)
	return t, det, tf
}

// baseThing is the in-memory form of an envelope without what the
// indexes need (indexed adds it): what a writer decides a change by.
func (d *Directory) baseThing(pub peer.ID, env *envelope, hash uint32) *thing {
	t := &thing{
		publisher: unique.Make(pub),
		id:        env.ThingID,
		seq:       env.Seq,
		signed:    unixNano(env.Signed),
		hash:      hash,
		created:   unixSec(env.Created),
		modified:  unixSec(env.Modified),
		expires:   unixSec(env.Expires),
		tombstone: env.Tombstone,
		own:       pub == d.self,
		size:      uint32(len(env.Raw)),
	}
	t.withLocal(env.Local)
	return t
}

// indexed sets what the thing holds of live thing t's summary and
// returns the details and term frequencies to index it with.
func (d *Directory) indexed(t *thing, s *summary) (*details, []termFreq) {
	t.title = intern(s.Title)
	t.withGroups(internAll(s.Groups))
	tf := termFreqs(s)
	return d.detailsOf(s), tf
}

// copyIndexed gives t what the thing holds of src, a thing with the same
// indexed content.
func copyIndexed(t, src *thing) {
	t.title = src.title
	t.withGroups(src.groups())
}

// recordHash is thing.hash of a signed record.
func (d *Directory) recordHash(raw []byte) uint32 { return uint32(maphash.Bytes(d.seed, raw)) }

// version parses a capability version, caching the result; nil if empty or
// not a semantic version.
func (d *Directory) version(v string) *semver.Version {
	if v == "" {
		return nil
	}
	d.versionsMu.Lock()
	defer d.versionsMu.Unlock()
	if sv, ok := d.versions[v]; ok {
		return sv
	}
	sv, err := semver.NewVersion(v)
	if err != nil {
		sv = nil
	}
	if len(d.versions) >= maxVersionCache {
		clear(d.versions)
	}
	d.versions[v] = sv
	return sv
}

// find returns the entry of (pub, id), tombstones and expired ones
// included. Callers hold mu, or wmu.
func (d *Directory) find(pub peer.ID, id string) *thing {
	for t := range d.byID.of(id) {
		if t.publisherID() == pub {
			return t
		}
	}
	return nil
}

// insert adds a new entry to memory. Callers hold mu for writing.
func (d *Directory) insert(t *thing, det *details, tf []termFreq) {
	d.byID.add(t)
	if t.own {
		d.own[t.id] = t
	}
	d.account(t, +1)
	if !t.tombstone {
		d.idx.add(t, det, tf, d.pubPlace(t))
	}
}

// swap replaces old by t in memory. refresh says that t has old's indexed
// content; else oldSum is the summary old was indexed with (nil:
// unreadable). Callers hold mu for writing.
func (d *Directory) swap(old, t *thing, det *details, tf []termFreq, refresh bool, oldSum *summary) {
	d.byID.replace(old, t)
	t.used.Store(max(t.used.Load(), old.used.Load())) // a Use of old since t was built
	if t.own {
		d.own[t.id] = t
	}
	if p := d.pubs[t.publisherID()]; p != nil && !t.own {
		p.bytes += int64(t.size) - int64(old.size)
		if old.public() {
			p.live--
			p.sum ^= ThingDigest(old.id, old.seq)
		}
		if t.public() {
			p.live++
			p.sum ^= ThingDigest(t.id, t.seq)
		}
	}
	if !t.own {
		d.learned += int64(t.size) - int64(old.size)
	}
	switch {
	case refresh && !old.tombstone:
		d.idx.replace(old, t)
		if det, ok := d.cache.Peek(old); ok {
			d.cache.Add(t, det)
		}
	default:
		if !old.tombstone {
			d.idx.remove(old, oldSum)
		}
		if !t.tombstone {
			d.idx.add(t, det, tf, d.pubPlace(t))
			d.cache.Add(t, det)
		}
	}
}

// drop removes an entry from memory; s is the summary it was indexed
// with (nil: unreadable). Callers hold mu for writing.
func (d *Directory) drop(t *thing, s *summary) {
	d.byID.remove(t)
	if t.own && d.own[t.id] == t {
		delete(d.own, t.id)
	}
	d.account(t, -1)
	if !t.tombstone {
		d.idx.remove(t, s)
	}
}

// Put stores rec if it is newer than the record held for its (publisher,
// thing id) and returns what changed; for an older record it returns Stale
// and an error wrapping ErrStale, for a learned record over its
// publisher's quota OverQuota and an error wrapping ErrQuota. The record must have been verified
// (proto.ParseRecord). local is the node-local metadata of an own Thing
// (nil keeps what is held) and must be nil for another publisher's Thing.
// The change is durable when Put returns.
func (d *Directory) Put(rec *lmosproto.Record, local *Local, opts ...PutOption) (Change, error) {
	return d.put1(putItem{rec: rec, local: local}, false, opts)
}

// PutUnsynced stores rec as Put does — the Thing is in memory, queries
// and events have it when it returns — but returns before its write is
// durable; Sync makes it durable. A crash before Sync may lose it. The
// federation announces a new version of an own Thing between the two,
// so that the fsync does not delay the announcement (node/federation,
// Publish, for what a crash in between leaves).
func (d *Directory) PutUnsynced(rec *lmosproto.Record, local *Local) (Change, error) {
	return d.put1(putItem{rec: rec, local: local}, true, nil)
}

// Sync makes every write made so far durable, those of PutUnsynced
// included.
func (d *Directory) Sync() error {
	if err := d.ds.Sync(context.Background(), keyThings); err != nil {
		return fmt.Errorf("directory: sync: %w", err)
	}
	return nil
}

func (d *Directory) put1(it putItem, unsynced bool, opts []PutOption) (Change, error) {
	for _, o := range opts {
		o(&it)
	}
	rec := it.rec
	changes, err := d.put([]putItem{it}, unsynced)
	if err != nil {
		return 0, err
	}
	switch changes[0] {
	case Stale:
		return Stale, fmt.Errorf("directory: thing %q of %s: seq %d: %w", rec.ThingID, rec.Publisher(), rec.Seq, ErrStale)
	case OverQuota:
		things, bytes := d.Usage(rec.Publisher())
		return OverQuota, fmt.Errorf("directory: thing %q of %s (%d bytes): the publisher holds %d Things, %d bytes here: %w",
			rec.ThingID, rec.Publisher(), len(rec.Raw), things, bytes, ErrQuota)
	case OverBudget:
		return OverBudget, fmt.Errorf("directory: thing %q of %s (%d bytes): learned records hold %d of %d bytes: %w",
			rec.ThingID, rec.Publisher(), len(rec.Raw), d.LearnedBytes(), d.cfg.MaxLearnedBytes, ErrBudget)
	}
	return changes[0], nil
}

// PutMany stores records learned together (a sync reply, a burst of
// gossip) in one durable write, as if each were given to Put in order. The
// i-th change is that of recs[i]; stale records get Stale, records over
// their publisher's quota OverQuota, and no error.
func (d *Directory) PutMany(recs []*lmosproto.Record, opts ...PutOption) ([]Change, error) {
	items := make([]putItem, len(recs))
	for i, r := range recs {
		items[i] = putItem{rec: r}
		for _, o := range opts {
			o(&items[i])
		}
	}
	return d.put(items, false)
}

type putItem struct {
	rec   *lmosproto.Record
	local *Local
	// used: learned for a use (Used).
	used bool
}

// putOp is one change a put applies to memory after its write is durable.
type putOp struct {
	old, t *thing
	// env is the new envelope of a new version; nil when the record was
	// seen again (refresh), whose t has old's indexed content.
	env     *envelope
	det     *details
	tf      []termFreq
	rec     *lmosproto.Record
	change  Change
	refresh bool
	// prev is the signed record an update replaces (Event.Previous).
	prev []byte
	// oldSum is the summary of the live old that a new version
	// replaces, read before the write (nil: unreadable), which its
	// removal from the indexes and its deletion event need.
	oldSum *summary
}

func checkRecord(rec *lmosproto.Record) error {
	switch {
	case rec == nil:
		return errors.New("directory: put: nil record")
	case rec.ThingID == "":
		return fmt.Errorf("directory: put: record of %s: empty thing id", rec.Publisher())
	case rec.Publisher().Validate() != nil:
		return fmt.Errorf("directory: put: thing %q: record without a valid publisher", rec.ThingID)
	case len(rec.Raw) == 0:
		return fmt.Errorf("directory: put: thing %q of %s: record without its signed bytes", rec.ThingID, rec.Publisher())
	case len(rec.Raw) > lmosproto.MaxRecordSize:
		return fmt.Errorf("directory: put: thing %q of %s: %d bytes exceeds the limit of %d", rec.ThingID, rec.Publisher(), len(rec.Raw), lmosproto.MaxRecordSize)
	case !rec.Tombstone() && rec.TD.ID != rec.ThingID:
		return fmt.Errorf("directory: put: thing %q of %s: TD has id %q", rec.ThingID, rec.Publisher(), rec.TD.ID)
	}
	return nil
}

type thingRef struct {
	publisher peer.ID
	id        string
}

// staged is an entry written by the put in progress.
type staged struct {
	t   *thing
	raw []byte
	sum *summary
}

// putReq is one caller's put waiting for the writer that commits it.
type putReq struct {
	items []putItem
	// unsynced leaves the fsync to Sync (PutUnsynced).
	unsynced bool
	changes  []Change
	err      error
}

// put stores items, durably unless unsynced, as one write: group commit.
// The caller queues its request and takes the writer lock; whoever holds
// the lock commits every request queued by then in one batch (one fsync),
// as if they had been put one after the other in queue order. A request
// taken by an earlier writer is done when its caller gets the lock. The
// batch is left unsynced only if every request in it is.
func (d *Directory) put(items []putItem, unsynced bool) ([]Change, error) {
	for _, it := range items {
		if err := checkRecord(it.rec); err != nil {
			return nil, err
		}
		if it.local != nil && it.rec.Publisher() != d.self {
			return nil, fmt.Errorf("directory: put: thing %q of %s: local metadata is for own Things only", it.rec.ThingID, it.rec.Publisher())
		}
	}
	r := &putReq{items: items, unsynced: unsynced}
	d.qmu.Lock()
	d.queue = append(d.queue, r)
	d.qmu.Unlock()
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.qmu.Lock()
	group := d.queue
	d.queue = nil
	d.qmu.Unlock()
	if len(group) > 0 {
		d.commitGroup(group)
	}
	return r.changes, r.err
}

// commitGroup writes the queued requests group in one batch. If that
// fails before anything was written, each request is written on its own,
// so that one's error is not another's. Callers hold wmu.
func (d *Directory) commitGroup(group []*putReq) {
	if d.closed {
		for _, r := range group {
			r.err = ErrClosed
		}
		return
	}
	items, unsynced := group[0].items, group[0].unsynced
	if len(group) > 1 {
		items = nil
		for _, r := range group {
			items = append(items, r.items...)
			unsynced = unsynced && r.unsynced
		}
	}
	changes, written, err := d.write(items, unsynced)
	if err != nil && !written && len(group) > 1 {
		for _, r := range group {
			r.changes, _, r.err = d.write(r.items, r.unsynced)
		}
		return
	}
	for _, r := range group {
		r.err = err
		if err == nil {
			r.changes, changes = changes[:len(r.items):len(r.items)], changes[len(r.items):]
		}
	}
}

// write stores items in one write (datastore batches of at most
// maxBatchBytes each, chunk.go), durable unless unsynced
// (lmosdatastore.DeferSync), as if each were put in order, and reports
// whether it may have written anything when it fails. The
// in-memory form of each new entry is built while the batch is written;
// memory changes after the batch is durable. Callers hold wmu.
func (d *Directory) write(items []putItem, unsynced bool) (_ []Change, written bool, _ error) {
	ctx := context.Background()
	if unsynced {
		ctx = lmosdatastore.DeferSync(ctx)
	}
	now := d.now()
	batch, err := newChunkedBatch(ctx, d.ds)
	if err != nil {
		return nil, false, fmt.Errorf("directory: put: %w", err)
	}
	changes, ops, r, build, err := d.stage(ctx, batch, items, now)
	if err != nil {
		return nil, batch.written, err
	}
	if len(ops) == 0 {
		return changes, false, nil
	}
	if err := d.stageEvictions(ctx, batch, r); err != nil {
		return nil, batch.written, fmt.Errorf("directory: put: %w", err)
	}
	if err := d.commit(ctx, batch, ops, build, unsynced); err != nil {
		return nil, true, fmt.Errorf("directory: put: %w", err)
	}
	d.apply(ops, r, now)
	return changes, true, nil
}

// stage decides what each of items changes, as if they were put in order,
// and adds the envelopes to store to batch. It returns the change of each
// item, the ops that write, and whether one of them is a new live entry
// whose in-memory form must be built (index).
func (d *Directory) stage(ctx context.Context, batch datastore.Batch, items []putItem, now time.Time) (changes []Change, ops []putOp, r *room, build bool, _ error) {
	changes = make([]Change, len(items))
	r = newRoom(items)
	ops = make([]putOp, 0, len(items))
	var pending map[thingRef]staged
	if len(items) > 1 {
		pending = make(map[thingRef]staged)
	}
	quota := make(map[peer.ID]usage)
	for i, it := range items {
		rec := it.rec
		pub, id := rec.Publisher(), rec.ThingID
		old, oldRaw, oldSum := d.find(pub, id), []byte(nil), (*summary)(nil)
		st, isPending := pending[thingRef{pub, id}]
		if isPending {
			old, oldRaw, oldSum = st.t, st.raw, st.sum
		}
		op, err := d.prepare(rec, it.local, old, oldRaw, now)
		if err != nil {
			return nil, nil, nil, false, err
		}
		if op.t != nil && op.change != Unchanged && d.overQuota(op.t, old, quota) {
			op = putOp{change: OverQuota}
		}
		if op.t != nil && !d.budgeted(&op, it, old, r, now) {
			op = putOp{change: OverBudget}
		}
		changes[i] = op.change
		if op.t == nil {
			continue
		}
		if op.env != nil && old != nil && !old.tombstone {
			// The replaced record: its summary to take it out of the
			// indexes, its bytes for the update event's consumers that
			// compute what changed (a merge patch). One read per update.
			if !isPending {
				if env, err := d.loadEnvelope(pub, id); err == nil {
					oldRaw, oldSum = env.Raw, &env.Summary
				}
			}
			op.oldSum = oldSum
			if op.change == Updated {
				op.prev = oldRaw
			}
		}
		if err := d.stageEnvelope(ctx, batch, &op); err != nil {
			return nil, nil, nil, false, err
		}
		build = build || (op.env != nil && !op.t.tombstone)
		ops = append(ops, op)
		if pending != nil {
			sum := oldSum
			if op.env != nil {
				sum = &op.env.Summary
			}
			pending[thingRef{pub, id}] = staged{t: op.t, raw: rec.Raw, sum: sum}
		}
	}
	return changes, ops, r, build, nil
}

// stageEnvelope adds op's envelope to batch: its new one, or for a refresh
// the record's with op's entry.
func (d *Directory) stageEnvelope(ctx context.Context, batch datastore.Batch, op *putOp) error {
	env := op.env
	if env == nil {
		env = d.envelopeOf(op.rec, op.t)
	}
	val, err := env.marshal()
	if err != nil {
		return fmt.Errorf("directory: put: %w", err)
	}
	pub, id := op.rec.Publisher(), op.rec.ThingID
	if err := batch.Put(ctx, d.thingKey(pub, id), val); err != nil {
		return fmt.Errorf("directory: put: thing %q of %s: %w", id, pub, err)
	}
	return nil
}

// commit makes batch durable (unless unsynced: lmosdatastore.DeferSync).
// With build, the in-memory entries of ops are built (tokenising, term
// frequencies) in another goroutine meanwhile: the build ends first, so
// the write's wait is not lengthened by a hand-over.
func (d *Directory) commit(ctx context.Context, batch datastore.Batch, ops []putOp, build, unsynced bool) error {
	var built chan struct{}
	if build {
		built = make(chan struct{})
		go func() {
			defer close(built)
			d.index(ops)
		}()
	}
	err := batch.Commit(ctx)
	if err == nil && !unsynced {
		err = d.ds.Sync(ctx, keyThings)
	}
	if build {
		<-built
	}
	return err
}

// apply puts the written ops in memory, under mu, and then tells the
// subscribers.
func (d *Directory) apply(ops []putOp, r *room, now time.Time) {
	d.mu.Lock()
	gone := d.evicted(r.evict, r.sums)
	for _, op := range ops {
		if op.old == nil {
			d.insert(op.t, op.det, op.tf)
		} else {
			d.swap(op.old, op.t, op.det, op.tf, op.refresh, op.oldSum)
		}
		if p := d.pubs[op.t.publisherID()]; p != nil && !op.t.own {
			// A record's proof time is evidence its publisher was alive.
			p.see(min(unixNano(op.rec.Signer.Created), now.UnixNano()))
		}
	}
	d.mu.Unlock()
	for _, op := range ops {
		d.notify(op)
	}
	d.announceEvicted(gone)
}

// index builds what the indexes need of each op's new entry, in order:
// a refresh takes its old entry's, which an earlier op of the same batch
// may have built (when none of ops is a new live entry, a refresh's copy
// of its old entry already has it).
func (d *Directory) index(ops []putOp) {
	for i := range ops {
		op := &ops[i]
		switch {
		case op.env == nil:
			copyIndexed(op.t, op.old)
		case !op.t.tombstone:
			op.det, op.tf = d.indexed(op.t, &op.env.Summary)
			d.idx.resolve(op.tf)
		}
	}
}

// Delta is a change to a learned publisher's usage (Usage): Things and
// bytes of signed records.
type Delta struct {
	Things int
	Bytes  int64
}

// Classify returns what Put(rec, nil) would change if nothing else were
// written first, without writing: Stale for a record not newer than the
// one held, Unchanged for the record held, OverQuota for one that would
// take its learned publisher over the quota — counting queued, what
// records of the publisher that the caller has accepted and not stored
// yet add — else Created, Updated or Deleted; and, for those, what the
// record adds to its publisher's usage (zero for an own record). It costs
// a map lookup (and a read of the held record's bytes when both have the
// same seq and proof time), not the parse and indexing of a Put: a
// gossip validator decides with it and stores after forwarding
// (node/federation).
func (d *Directory) Classify(rec *lmosproto.Record, queued Delta) (Change, Delta, error) {
	if err := checkRecord(rec); err != nil {
		return 0, Delta{}, err
	}
	pub := rec.Publisher()
	d.mu.RLock()
	old := d.find(pub, rec.ThingID)
	cur := usage{queued.Things, queued.Bytes}
	if p := d.pubs[pub]; p != nil {
		cur.things += p.things
		cur.bytes += p.bytes
	}
	d.mu.RUnlock()
	if old != nil {
		if old.seq == rec.Seq && old.signed == unixNano(rec.Signer.Created) && old.tombstone == rec.Tombstone() &&
			old.hash == d.recordHash(rec.Raw) {
			return Unchanged, Delta{}, nil
		}
		newer, err := d.newer(rec, old, nil)
		if err != nil {
			return 0, Delta{}, err
		}
		if !newer {
			return Stale, Delta{}, nil
		}
	}
	var delta usage
	if pub != d.self {
		delta = usage{things: 1, bytes: int64(len(rec.Raw))}
		if old != nil {
			delta = usage{bytes: int64(len(rec.Raw)) - int64(old.size)}
		}
		if d.exceeds(cur, delta) {
			return OverQuota, Delta{}, nil
		}
	}
	change := Updated
	switch {
	case rec.Tombstone():
		change = Deleted
	case old == nil || old.tombstone:
		change = Created
	}
	return change, Delta{Things: delta.things, Bytes: delta.bytes}, nil
}

// prepare decides what rec does to old and builds the new entry; a nil
// op.t means nothing is written.
func (d *Directory) prepare(rec *lmosproto.Record, local *Local, old *thing, oldRaw []byte, now time.Time) (putOp, error) {
	pub, id := rec.Publisher(), rec.ThingID
	hash := d.recordHash(rec.Raw)
	signed := unixNano(rec.Signer.Created)
	op := putOp{old: old, rec: rec}
	if old != nil && old.seq == rec.Seq && old.signed == signed && old.tombstone == rec.Tombstone() && old.hash == hash {
		// The same record again: refresh a learned entry's expiry, store new
		// local metadata of an own one.
		u := old.clone()
		switch {
		case !old.own:
			u.expires = unixSec(now.Add(d.ttl(old)))
		case local != nil && *local != old.localOf():
			u.withLocal(*local)
		default:
			return op, nil
		}
		op.t, op.refresh, op.change = u, true, Unchanged
		return op, nil
	}
	if old != nil {
		newer, err := d.newer(rec, old, oldRaw)
		if err != nil {
			return op, err
		}
		if !newer {
			op.change = Stale
			return op, nil
		}
	}

	// Registration times are held in whole seconds (thing.created): the
	// envelope stores them so too, so that it agrees with memory.
	reg := fromUnixSec(unixSec(now))
	env := envelope{
		Tombstone: rec.Tombstone(),
		Own:       pub == d.self,
		Seq:       rec.Seq,
		Signed:    rec.Signer.Created,
		Created:   reg,
		Modified:  reg,
		ThingID:   id,
		Summary:   summarize(rec.TD),
		Raw:       rec.Raw,
	}
	switch {
	case env.Own && env.Tombstone:
		env.TTL = d.cfg.TombstoneTTL
	case !env.Own:
		env.TTL = d.cfg.TTL
	}
	if env.TTL > 0 {
		env.Expires = reg.Add(env.TTL)
	}
	if old != nil && (!old.tombstone || env.Tombstone) {
		// A new version keeps its registration; a Thing created again after
		// its tombstone is registered anew.
		env.Created = fromUnixSec(old.created)
	}
	if env.Own {
		switch {
		case local != nil:
			env.Local = *local
		case old != nil:
			env.Local = old.localOf()
		}
	}
	op.t, op.env = d.baseThing(pub, &env, hash), &env
	switch {
	case env.Tombstone:
		op.change = Deleted
	case old == nil || old.tombstone:
		op.change = Created
	default:
		op.change = Updated
	}
	return op, nil
}

// newer reports whether rec supersedes the held entry old, by
// proto.Record.Newer. The held record's bytes are read only when Newer
// needs them: same sequence number and proof time.
func (d *Directory) newer(rec *lmosproto.Record, old *thing, oldRaw []byte) (bool, error) {
	held := &lmosproto.Record{ThingID: old.id, Seq: old.seq, Signer: lmosproto.Signer{PeerID: old.publisherID(), Created: fromUnixNano(old.signed)}}
	if !old.tombstone {
		held.TD = liveMarker
	}
	if rec.Seq == old.seq && unixNano(rec.Signer.Created) == old.signed {
		if oldRaw == nil {
			env, err := d.loadEnvelope(old.publisherID(), old.id)
			if err != nil {
				return false, fmt.Errorf("directory: put: %w", err)
			}
			oldRaw = env.Raw
		}
		held.Raw = oldRaw
	}
	return rec.Newer(held), nil
}

// envelopeOf is the stored form of t, whose record is rec.
func (d *Directory) envelopeOf(rec *lmosproto.Record, t *thing) *envelope {
	return &envelope{
		Tombstone: t.tombstone,
		Own:       t.own,
		Seq:       t.seq,
		Signed:    fromUnixNano(t.signed),
		Created:   fromUnixSec(t.created),
		Modified:  fromUnixSec(t.modified),
		Expires:   fromUnixSec(t.expires),
		TTL:       d.ttl(t),
		ThingID:   t.id,
		Local:     t.localOf(),
		Summary:   summarize(rec.TD),
		Raw:       rec.Raw,
	}
}

// ttl is the lifetime t's expiry is computed with: Config.TTL for a
// learned entry, Config.TombstoneTTL for an own tombstone, none for an own
// Thing.
func (d *Directory) ttl(t *thing) time.Duration {
	switch {
	case !t.own:
		return d.cfg.TTL
	case t.tombstone:
		return d.cfg.TombstoneTTL
	}
	return 0
}

// Purge drops every entry expired at now, and with Config.OfflineTTL the
// learned entries of publishers offline that long, and returns how many it
// dropped.
// The purge loop calls it every Config.PurgeInterval; a failed write is
// logged and retried on the next call.
func (d *Directory) Purge(now time.Time) int {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.closed {
		return 0
	}
	n := now.UnixNano()
	var expired []*thing
	for t := range d.byID.all() {
		if t.expired(n) || (d.cfg.OfflineTTL > 0 && d.offlineExpired(t, n)) {
			expired = append(expired, t)
		}
	}
	if len(expired) == 0 {
		return 0
	}
	if err := d.remove(expired); err != nil {
		d.log.Warn("directory: purge failed", "expired", len(expired), "error", err)
		return 0
	}
	d.log.Debug("directory: purged", "expired", len(expired))
	return len(expired)
}

// remove deletes things from the datastore and from memory, and emits
// thing_deleted for the live ones. Callers hold wmu.
func (d *Directory) remove(things []*thing) error {
	ctx := context.Background()
	sums := d.summaries(things)
	batch, err := d.ds.Batch(ctx)
	if err == nil {
		for _, t := range things {
			if err = batch.Delete(ctx, d.thingKey(t.publisherID(), t.id)); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = batch.Commit(ctx)
	}
	if err == nil {
		err = d.ds.Sync(ctx, keyThings)
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	for i, t := range things {
		d.drop(t, sums[i])
	}
	d.mu.Unlock()
	for i, t := range things {
		if !t.tombstone {
			e := d.entryWith(t, 0, d.summaryDetails(sums[i]))
			e.Tombstone = true
			d.events.emit(EventDeleted, e, nil)
		}
	}
	return nil
}

// summaries reads the stored summaries of the live things among things,
// before they are deleted: what their removal from the indexes and their
// deletion events need. nil for a tombstone or an unreadable record.
func (d *Directory) summaries(things []*thing) []*summary {
	out := make([]*summary, len(things))
	for i, t := range things {
		if t.tombstone {
			continue
		}
		if env, err := d.loadEnvelope(t.publisherID(), t.id); err == nil && !env.Tombstone {
			out[i] = &env.Summary
		}
	}
	return out
}

// summaryDetails is the details of s; none for nil.
func (d *Directory) summaryDetails(s *summary) *details {
	if s == nil {
		return noDetails
	}
	return d.detailsOf(s)
}

func (d *Directory) purgeLoop() {
	tick := time.NewTicker(d.cfg.PurgeInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-tick.C:
			d.Purge(d.now())
		}
	}
}

// Get returns the live Thing of (publisher, id).
func (d *Directory) Get(publisher peer.ID, id string) (Entry, bool) {
	e, ok := d.Latest(publisher, id)
	if !ok || e.Tombstone {
		return Entry{}, false
	}
	return e, true
}

// Latest returns the newest record held for (publisher, id), a tombstone
// included: what a node answers a fetch with, and what the sequence number
// of a new version must exceed.
func (d *Directory) Latest(publisher peer.ID, id string) (Entry, bool) {
	now := d.now().UnixNano()
	d.mu.RLock()
	defer d.mu.RUnlock()
	t := d.find(publisher, id)
	if t == nil || t.expired(now) {
		return Entry{}, false
	}
	return d.entry(t, 0), true
}

// Lookup returns the live Things of every publisher that has one with this
// id: the node's own first, then by publisher.
func (d *Directory) Lookup(id string) []Entry {
	now := d.now().UnixNano()
	d.mu.RLock()
	var out []Entry
	for t := range d.byID.of(id) {
		if !t.tombstone && !t.expired(now) {
			out = append(out, d.entry(t, 0))
		}
	}
	d.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Own != b.Own {
			if a.Own {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a.Publisher), string(b.Publisher))
	})
	return out
}

// Own returns the node's own live Things, by title and id.
func (d *Directory) Own() []Entry {
	return d.ownEntries(false)
}

// OwnRecords returns every own record held, tombstones included, by title
// and id: what the node republishes.
func (d *Directory) OwnRecords() []Entry {
	return d.ownEntries(true)
}

func (d *Directory) ownEntries(tombstones bool) []Entry {
	now := d.now().UnixNano()
	d.mu.RLock()
	out := make([]Entry, 0, len(d.own))
	for _, t := range d.own {
		if (tombstones || !t.tombstone) && !t.expired(now) {
			out = append(out, d.entry(t, 0))
		}
	}
	d.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.Title, b.Title); c != 0 {
			return c
		}
		return strings.Compare(a.ThingID, b.ThingID)
	})
	return out
}

// Len returns the number of live Things held, own and learned (expired ones
// count until they are purged).
func (d *Directory) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.idx.live
}

// Counts are the live Things of a directory by origin and scope.
type Counts struct {
	// Own and OwnScoped are the node's own public and group-scoped
	// Things; Learned and LearnedScoped those learned from other nodes.
	Own, OwnScoped, Learned, LearnedScoped int
	// LearnedOnline are the learned Things (of either scope) whose
	// publisher online reported true.
	LearnedOnline int
}

// Counts counts the live Things held (expired ones count until they are
// purged, as in Len); online, if not nil, tells which publishers are
// online now (e.g. connected). It walks every entry: for a metrics
// scrape, not a request path.
func (d *Directory) Counts(online func(peer.ID) bool) Counts {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var c Counts
	for t := range d.byID.all() {
		if t.tombstone {
			continue
		}
		if !t.own && online != nil && online(t.publisherID()) {
			c.LearnedOnline++
		}
		switch scoped := len(t.groups()) > 0; {
		case t.own && scoped:
			c.OwnScoped++
		case t.own:
			c.Own++
		case scoped:
			c.LearnedScoped++
		default:
			c.Learned++
		}
	}
	return c
}
