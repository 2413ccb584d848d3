package federation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
)

// Bounds of a cold lookup.
const (
	// MaxProviders is the most providers one lookup asks.
	MaxProviders = 20
	// maxConcurrentAsks bounds the providers a lookup asks at once.
	maxConcurrentAsks = 4
	// connectTimeout bounds dialling one provider.
	connectTimeout = 10 * time.Second
)

// FindCapability returns the live Things that offer the capability id
// (lmos:id, exactly as written). It answers from the directory if it holds
// any; on a miss it finds the capability's providers in the DHT
// (dht.CapabilityCID), asks each over the sync protocol for its Things
// with that capability, checks and stores what they send (as learned
// Things, which expire unless seen again) and answers from the directory
// then. An empty result with a nil error means nobody offers it.
func (f *Federation) FindCapability(ctx context.Context, id string) ([]directory.Entry, error) {
	if id == "" {
		return nil, errors.New("federation: find capability: empty id")
	}
	// A trailing "@" ends the capability id with an empty version
	// constraint, so an "@" inside the id is not read as one.
	q := directory.Query{Capability: id + "@"}
	return f.find(ctx, "capability", q, lmosdht.CapabilityCID(id), Filter{Capability: id})
}

// FindType is FindCapability for an @type as written in TDs (e.g.
// "lmos:Agent"), with provider key dht.TypeCID.
func (f *Federation) FindType(ctx context.Context, typ string) ([]directory.Entry, error) {
	if typ == "" {
		return nil, errors.New("federation: find type: empty type")
	}
	return f.find(ctx, "type", directory.Query{Type: typ}, lmosdht.TypeCID(typ), Filter{Type: typ})
}

// FindVendor is FindCapability for a vendor name (compared caselessly,
// dht.NormalizeVendor), with provider key dht.VendorCID.
func (f *Federation) FindVendor(ctx context.Context, name string) ([]directory.Entry, error) {
	if lmosdht.NormalizeVendor(name) == "" {
		return nil, errors.New("federation: find vendor: empty name")
	}
	return f.find(ctx, "vendor", directory.Query{Vendor: name}, lmosdht.VendorCID(name), Filter{Vendor: name})
}

func (f *Federation) find(ctx context.Context, what string, q directory.Query, key cid.Cid, flt Filter) ([]directory.Entry, error) {
	q.Visible = f.visible
	res, err := f.dir.Search(q)
	if err != nil {
		return nil, fmt.Errorf("federation: find %s: %w", what, err)
	}
	if res.Total > 0 || f.p.DHT == nil {
		return res.Entries, nil
	}
	asked, learned := f.askProviders(ctx, key, flt)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("federation: find %s %s: %w", what, key, err)
	}
	f.log.Debug("cold lookup", "what", what, "key", key, "providers", asked, "learned", learned)
	if res, err = f.dir.Search(q); err != nil {
		return nil, fmt.Errorf("federation: find %s: %w", what, err)
	}
	return res.Entries, nil
}

// askProviders syncs with up to MaxProviders providers of key, with flt,
// and returns how many it asked and how many records changed the
// directory.
func (f *Federation) askProviders(ctx context.Context, key cid.Cid, flt Filter) (asked, learned int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, maxConcurrentAsks)
	)
	for ai := range f.p.DHT.FindProvidersAsync(ctx, key, MaxProviders) {
		if ai.ID == f.self || ai.ID == "" {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		asked++
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := f.askProvider(ctx, ai, flt)
			if err != nil {
				f.log.Debug("provider did not answer", "peer", ai.ID, "key", key, "err", err)
				return
			}
			mu.Lock()
			learned += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return asked, learned
}

func (f *Federation) askProvider(ctx context.Context, ai peer.AddrInfo, flt Filter) (int, error) {
	if len(ai.Addrs) > 0 {
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		err := f.p.Host.Connect(cctx, ai)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("connect: %w", err)
		}
	}
	return f.Sync(ctx, ai.ID, flt)
}

// FetchThing returns the Thing id of publisher: the node's own from the
// directory, another publisher's from the DHT (dht.ThingKey), checked with
// the validator (kad-dht may return its own stored copy unchecked) and
// stored in the directory as learned. If the DHT has nothing the directory
// is asked. It fails with an error wrapping ErrRemoved if the newest record
// is a tombstone, ErrNotFound if there is none.
func (f *Federation) FetchThing(ctx context.Context, publisher peer.ID, id string) (directory.Entry, error) {
	if err := publisher.Validate(); err != nil {
		return directory.Entry{}, fmt.Errorf("federation: fetch thing %q: publisher: %w", id, err)
	}
	if id == "" {
		return directory.Entry{}, fmt.Errorf("federation: fetch thing of %s: empty id", publisher)
	}
	if publisher != f.self && f.p.DHT != nil {
		if err := f.fetchFromDHT(ctx, publisher, id); err != nil {
			return directory.Entry{}, err
		}
	}
	e, ok := f.dir.Latest(publisher, id)
	switch {
	case !ok:
		return directory.Entry{}, fmt.Errorf("federation: fetch thing %q of %s: %w", id, publisher, ErrNotFound)
	case e.Tombstone:
		return directory.Entry{}, fmt.Errorf("federation: fetch thing %q of %s: seq %d: %w", id, publisher, e.Seq, ErrRemoved)
	}
	return e, nil
}

// fetchFromDHT reads the record of (publisher, id) from the DHT and stores
// it. Not finding it is not an error (the directory may know it).
func (f *Federation) fetchFromDHT(ctx context.Context, publisher peer.ID, id string) error {
	key := lmosdht.ThingKey(publisher, id)
	raw, err := f.p.DHT.GetValue(ctx, key)
	switch {
	case errors.Is(err, routing.ErrNotFound):
		return nil
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("federation: fetch thing %q of %s: %w", id, publisher, ctx.Err())
	case err != nil:
		f.log.Debug("dht get failed", "thing", id, "publisher", publisher, "err", err)
		return nil
	}
	rec, err := f.intake.CheckKey(key, raw)
	if err != nil {
		return fmt.Errorf("federation: fetch thing %q of %s: dht record: %w", id, publisher, err)
	}
	if _, err := f.intake.Store("dht", rec); err != nil && !errors.Is(err, ErrNotNewer) && !errors.Is(err, errReplay) {
		return fmt.Errorf("federation: fetch thing %q of %s: %w", id, publisher, err)
	}
	return nil
}
