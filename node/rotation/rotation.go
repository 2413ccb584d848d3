package rotation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Wire names and limits (docs/wire.md, "Key rotation and revocation").
const (
	// Topic carries key records, one per message.
	Topic = "/lmos/1/keys"
	// Protocol answers with every key record the node holds.
	Protocol = "/lmos/keys/1.0.0"
	// MaxRecords bounds the records a node holds and a sync answer
	// carries.
	MaxRecords = 1024
	// MaxAnswerSize bounds the frame of a Protocol answer: MaxRecords
	// records of the largest size, with their commas and brackets.
	MaxAnswerSize = MaxRecords*(lmosproto.MaxKeyRecordSize+1) + 1
	// SyncTimeout bounds one exchange of the sync protocol.
	SyncTimeout = 10 * time.Second
	// DatastorePrefix is where the records are kept.
	DatastorePrefix = "/keys"
)

// maxChain bounds how many rotations Successor follows.
const maxChain = 16

// ErrRevoked and ErrRotated are what Retired wraps.
var (
	ErrRevoked = errors.New("key revoked")
	ErrRotated = errors.New("key rotated away from")
)

// Deps are what a Registry works with; the caller owns them.
type Deps struct {
	// Datastore keeps the records below DatastorePrefix. Required.
	Datastore ds.Batching
	// Self is the node's peer ID.
	Self peer.ID
}

// Registry holds the key records a node knows: the rotation of each key
// that has one (the earliest, by the old key's proof time, then the
// smaller bytes, so every node keeps the same) and its revocation. It
// answers whether a key is retired and who succeeds it, and tells its
// subscribers (OnRecord) of every record that changes what it answers. It
// is safe for concurrent use.
type Registry struct {
	p   Deps
	log *slog.Logger

	mu      sync.RWMutex
	rotated map[peer.ID]*lmosproto.KeyRecord
	revoked map[peer.ID]*lmosproto.KeyRecord
	hooks   []func(*lmosproto.KeyRecord)
	closing bool

	host  host.Host
	topic *pubsub.Topic
	ps    *pubsub.PubSub
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// New returns the registry of deps with the records it kept.
func New(deps Deps, log *slog.Logger) (*Registry, error) {
	if deps.Datastore == nil {
		return nil, errors.New("rotation: Deps.Datastore is nil")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &Registry{p: deps, log: log, rotated: map[peer.ID]*lmosproto.KeyRecord{},
		revoked: map[peer.ID]*lmosproto.KeyRecord{}, ctx: ctx, stop: stop}
	res, err := deps.Datastore.Query(ctx, query.Query{Prefix: DatastorePrefix})
	if err != nil {
		stop()
		return nil, fmt.Errorf("rotation: load: %w", err)
	}
	entries, err := res.Rest()
	if err != nil {
		stop()
		return nil, fmt.Errorf("rotation: load: %w", err)
	}
	for _, e := range entries {
		rec, err := lmosproto.ParseKeyRecord(e.Value)
		if err != nil {
			log.Error("kept key record does not check; skipped", "key", e.Key, "err", err)
			continue
		}
		r.keep(rec)
	}
	return r, nil
}

// OnRecord adds fn to what is called, outside the registry's lock, for
// every record that changes what the registry answers. Call it before
// Start.
func (r *Registry) OnRecord(fn func(*lmosproto.KeyRecord)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks = append(r.hooks, fn)
}

// Add checks raw and keeps it. It reports whether the record changed
// what the registry answers (a record known already, or a later rotation
// of a key rotated already, does not); a new one is persisted, announced
// on Topic once started, and handed to the OnRecord functions.
func (r *Registry) Add(ctx context.Context, raw []byte) (*lmosproto.KeyRecord, bool, error) {
	rec, err := lmosproto.ParseKeyRecord(raw)
	if err != nil {
		return nil, false, err
	}
	if rec.Rotation != nil {
		// The rotation a revocation by the successor names is itself news.
		if _, _, err := r.Add(ctx, rec.Rotation.Raw); err != nil {
			return nil, false, err
		}
	}
	r.mu.Lock()
	if r.count() >= MaxRecords && !r.known(rec) {
		r.mu.Unlock()
		return rec, false, fmt.Errorf("rotation: %d key records held, the limit is %d", MaxRecords, MaxRecords)
	}
	changed := r.keep(rec)
	hooks := slices.Clone(r.hooks)
	if changed && r.topic != nil && !r.closing {
		// Under r.mu: Close sets closing under it before it waits.
		topic := r.topic
		r.wg.Go(func() {
			if err := topic.Publish(r.ctx, rec.Raw); err != nil && r.ctx.Err() == nil {
				r.log.Debug("announce key record", "key", rec.Key, "err", err)
			}
		})
	}
	r.mu.Unlock()
	if !changed {
		return rec, false, nil
	}
	if err := r.p.Datastore.Put(ctx, recordKey(rec), rec.Raw); err != nil {
		return rec, true, fmt.Errorf("rotation: keep record of %s: %w", rec.Key, err)
	}
	if err := r.p.Datastore.Sync(ctx, ds.NewKey(DatastorePrefix)); err != nil {
		return rec, true, fmt.Errorf("rotation: keep record of %s: %w", rec.Key, err)
	}
	r.log.Info("key record accepted", "type", rec.Type, "key", rec.Key, "successor", rec.Successor)
	for _, fn := range hooks {
		fn(rec)
	}
	return rec, true, nil
}

func recordKey(rec *lmosproto.KeyRecord) ds.Key {
	kind := "rotation"
	if rec.Revocation() {
		kind = "revocation"
	}
	return ds.NewKey(DatastorePrefix + "/" + kind + "/" + rec.Key.String())
}

// keep files rec under r.mu and reports whether it changed anything.
func (r *Registry) keep(rec *lmosproto.KeyRecord) bool {
	m := r.rotated
	if rec.Revocation() {
		m = r.revoked
	}
	if held, ok := m[rec.Key]; ok && !earlier(rec, held) {
		return false
	}
	m[rec.Key] = rec
	return true
}

// earlier orders two records of one key: the earlier proof, then the
// smaller bytes.
func earlier(a, b *lmosproto.KeyRecord) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return bytes.Compare(a.Raw, b.Raw) < 0
}

func (r *Registry) known(rec *lmosproto.KeyRecord) bool {
	m := r.rotated
	if rec.Revocation() {
		m = r.revoked
	}
	_, ok := m[rec.Key]
	return ok
}

func (r *Registry) count() int { return len(r.rotated) + len(r.revoked) }

// Retired returns nil if p's key still signs records, else an error
// wrapping ErrRevoked or ErrRotated.
func (r *Registry) Retired(p peer.ID) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rec, ok := r.revoked[p]; ok {
		return fmt.Errorf("%w at %s", ErrRevoked, rec.Created.UTC().Format(time.RFC3339))
	}
	if rec, ok := r.rotated[p]; ok {
		return fmt.Errorf("%w at %s (successor %s)", ErrRotated, rec.Created.UTC().Format(time.RFC3339), rec.Successor)
	}
	return nil
}

// RetiredAt is Retired for something p signed at created: only a record
// created at or before it counts.
func (r *Registry) RetiredAt(p peer.ID, created time.Time) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rec, ok := r.revoked[p]; ok && !rec.Created.After(created) {
		return fmt.Errorf("%w at %s", ErrRevoked, rec.Created.UTC().Format(time.RFC3339))
	}
	if rec, ok := r.rotated[p]; ok && !rec.Created.After(created) {
		return fmt.Errorf("%w at %s (successor %s)", ErrRotated, rec.Created.UTC().Format(time.RFC3339), rec.Successor)
	}
	return nil
}

// Successor returns the key that succeeds p, following rotations to the
// last one, and whether p has a successor at all. A revoked key's
// successor is the one its revocation names (a revocation signed by the
// successor, with its rotation); a key revoked by itself has none,
// whatever rotations of it are known: a thief who holds the key can sign
// those too.
func (r *Registry) Successor(p peer.ID) (peer.ID, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cur, found := p, false
	for range maxChain {
		next, ok := r.next(cur)
		if !ok || next == p {
			break
		}
		cur, found = next, true
	}
	return cur, found
}

// next is the successor of p by one step; the caller holds r.mu.
func (r *Registry) next(p peer.ID) (peer.ID, bool) {
	if rev, ok := r.revoked[p]; ok {
		if rev.Rotation == nil {
			return "", false
		}
		return rev.Rotation.Successor, true
	}
	rec, ok := r.rotated[p]
	if !ok {
		return "", false
	}
	return rec.Successor, true
}

// Records returns every record held, rotations first, each kind in key
// order.
func (r *Registry) Records() []*lmosproto.KeyRecord {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*lmosproto.KeyRecord
	for _, m := range []map[peer.ID]*lmosproto.KeyRecord{r.rotated, r.revoked} {
		keys := slices.Sorted(func(yield func(peer.ID) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			out = append(out, m[k])
		}
	}
	return out
}

// Start serves Protocol on h, asks every peer that identify reports
// speaking it for its records, and, with ps, joins Topic. Records
// arriving either way are added.
func (r *Registry) Start(h host.Host, ps *pubsub.PubSub) error {
	r.host = h
	h.SetStreamHandler(Protocol, r.serve)
	sub, err := h.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		return fmt.Errorf("rotation: %w", err)
	}
	r.wg.Go(func() { r.watchIdentify(sub) })
	r.wg.Go(func() {
		<-r.ctx.Done()
		_ = sub.Close()
	})
	if ps == nil {
		return nil
	}
	if err := ps.RegisterTopicValidator(Topic, r.validate); err != nil {
		return fmt.Errorf("rotation: %w", err)
	}
	topic, err := ps.Join(Topic)
	if err != nil {
		return fmt.Errorf("rotation: %w", err)
	}
	tsub, err := topic.Subscribe()
	if err != nil {
		return fmt.Errorf("rotation: %w", err)
	}
	r.mu.Lock()
	r.topic, r.ps = topic, ps
	r.mu.Unlock()
	r.wg.Go(func() {
		for {
			if _, err := tsub.Next(r.ctx); err != nil {
				return // the validator added the record
			}
		}
	})
	r.wg.Go(func() {
		<-r.ctx.Done()
		tsub.Cancel()
	})
	return nil
}

// validate is the validator of Topic: a valid record is added and
// accepted (relayed, also when known: message IDs are content hashes, so
// gossipsub forwards each record once); anything else is rejected.
func (r *Registry) validate(ctx context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	if len(msg.GetData()) > lmosproto.MaxKeyRecordSize {
		return pubsub.ValidationReject
	}
	if _, _, err := r.Add(ctx, msg.GetData()); err != nil {
		r.log.Debug("key record refused", "from", msg.ReceivedFrom, "err", err)
		return pubsub.ValidationReject
	}
	return pubsub.ValidationAccept
}

// Close stops the registry's goroutines and leaves Topic.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.stop()
	if r.host != nil {
		r.host.RemoveStreamHandler(Protocol)
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.topic != nil {
		err = errors.Join(r.topic.Close(), r.ps.UnregisterTopicValidator(Topic))
		r.topic = nil
	}
	return err
}

// serve answers Protocol: one frame holding a JSON array of every record
// held; the asker sends nothing and closes its side.
func (r *Registry) serve(s network.Stream) {
	defer func() { _ = s.Close() }()
	_ = s.SetDeadline(time.Now().Add(SyncTimeout))
	recs := r.Records()
	out := make([]json.RawMessage, len(recs))
	for i, rec := range recs {
		out[i] = rec.Raw
	}
	data, err := json.Marshal(out)
	if err == nil {
		err = lmosproto.WriteFrame(s, data)
	}
	if err != nil {
		_ = s.Reset()
	}
}

func (r *Registry) watchIdentify(sub event.Subscription) {
	for ev := range sub.Out() {
		e, ok := ev.(event.EvtPeerIdentificationCompleted)
		if !ok || e.Peer == r.p.Self || !slices.Contains(e.Protocols, Protocol) {
			continue
		}
		r.wg.Go(func() {
			if n, err := r.Sync(r.ctx, e.Peer); err != nil && r.ctx.Err() == nil {
				r.log.Debug("key records sync failed", "peer", e.Peer, "err", err)
			} else if n > 0 {
				r.log.Debug("key records synced", "peer", e.Peer, "new", n)
			}
		})
	}
}

// Sync asks p for its key records, adds them and returns how many were
// new.
func (r *Registry) Sync(ctx context.Context, p peer.ID) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	s, err := r.host.NewStream(ctx, p, Protocol)
	if err != nil {
		return 0, fmt.Errorf("rotation: sync with %s: %w", p, err)
	}
	defer func() { _ = s.Close() }()
	_ = s.SetDeadline(time.Now().Add(SyncTimeout))
	_ = s.CloseWrite()
	body, err := lmosproto.ReadFrame(s, MaxAnswerSize)
	if err != nil {
		return 0, fmt.Errorf("rotation: sync with %s: %w", p, err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return 0, fmt.Errorf("rotation: sync with %s: %w", p, err)
	}
	if len(raws) > MaxRecords {
		return 0, fmt.Errorf("rotation: sync with %s: %d records, the limit is %d", p, len(raws), MaxRecords)
	}
	n := 0
	for _, raw := range raws {
		_, added, err := r.Add(ctx, raw)
		if err != nil {
			return n, fmt.Errorf("rotation: sync with %s: %w", p, err)
		}
		if added {
			n++
		}
	}
	return n, nil
}
