package dht

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-base32"
)

// ErrRecordQuota is returned when a peer puts a Thing record into this
// node's DHT store beyond Params.MaxRecordsPerPublisher for its
// publisher; kad-dht answers the put with an error and stores nothing.
var ErrRecordQuota = errors.New("dht: the publisher's Thing records held here are at the quota")

// quotaStore is the datastore kad-dht keeps its records in, bounding the
// Thing records ("/lmos-td/<publisher>/…") it holds per publisher: a put
// of a new key beyond the quota is refused; overwriting a held key (a
// newer version, a republication) and every other key pass. kad-dht keys
// a value record by the base32 of its record key, one key segment;
// provider records live below "/providers" and are not counted.
type quotaStore struct {
	ds.Batching
	max int

	mu    sync.Mutex
	count map[peer.ID]int
}

// newQuotaStore wraps d (kad-dht's namespace of the node's datastore) and
// counts the Thing records it holds.
func newQuotaStore(d ds.Batching, max int) (*quotaStore, error) {
	q := &quotaStore{Batching: d, max: max, count: make(map[peer.ID]int)}
	res, err := d.Query(context.Background(), query.Query{KeysOnly: true})
	if err != nil {
		return nil, fmt.Errorf("dht: count held records: %w", err)
	}
	defer func() { _ = res.Close() }()
	for r := range res.Next() {
		if r.Error != nil {
			return nil, fmt.Errorf("dht: count held records: %w", r.Error)
		}
		if p, ok := thingPublisher(ds.RawKey(r.Key)); ok {
			q.count[p]++
		}
	}
	return q, nil
}

// thingPublisher returns the publisher of a Thing record kept under k.
func thingPublisher(k ds.Key) (peer.ID, bool) {
	s := k.String()
	if strings.Count(s, "/") != 1 {
		return "", false // not a value record (providers, …)
	}
	raw, err := base32.RawStdEncoding.DecodeString(s[1:])
	if err != nil {
		return "", false
	}
	p, _, err := ParseThingKey(string(raw))
	return p, err == nil
}

// Put stores value under k, unless k is a new Thing record of a publisher
// at the quota.
func (q *quotaStore) Put(ctx context.Context, k ds.Key, value []byte) error {
	p, ok := thingPublisher(k)
	if !ok {
		return q.Batching.Put(ctx, k, value)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	held, err := q.Has(ctx, k)
	if err != nil {
		return err
	}
	if !held && q.count[p] >= q.max {
		return fmt.Errorf("%w: %s holds %d", ErrRecordQuota, p, q.count[p])
	}
	if err := q.Batching.Put(ctx, k, value); err != nil {
		return err
	}
	if !held {
		q.count[p]++
	}
	return nil
}

// Delete removes k, and a Thing record from its publisher's count.
func (q *quotaStore) Delete(ctx context.Context, k ds.Key) error {
	p, ok := thingPublisher(k)
	if !ok {
		return q.Batching.Delete(ctx, k)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	held, err := q.Has(ctx, k)
	if err != nil {
		return err
	}
	if err := q.Batching.Delete(ctx, k); err != nil {
		return err
	}
	if held {
		if q.count[p]--; q.count[p] <= 0 {
			delete(q.count, p)
		}
	}
	return nil
}

// Batch returns a batch whose puts and deletes of Thing records go
// through the quota at once (kad-dht batches only provider records).
func (q *quotaStore) Batch(ctx context.Context) (ds.Batch, error) {
	b, err := q.Batching.Batch(ctx)
	if err != nil {
		return nil, err
	}
	return quotaBatch{Batch: b, q: q}, nil
}

type quotaBatch struct {
	ds.Batch
	q *quotaStore
}

func (b quotaBatch) Put(ctx context.Context, k ds.Key, value []byte) error {
	if _, ok := thingPublisher(k); ok {
		return b.q.Put(ctx, k, value)
	}
	return b.Batch.Put(ctx, k, value)
}

func (b quotaBatch) Delete(ctx context.Context, k ds.Key) error {
	if _, ok := thingPublisher(k); ok {
		return b.q.Delete(ctx, k)
	}
	return b.Batch.Delete(ctx, k)
}
