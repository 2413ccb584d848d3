package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Bounds of a cold lookup.
const (
	// MaxProviders is the most providers that answer one lookup: it stops
	// once that many answered.
	MaxProviders = 20
	// maxAttempts bounds the providers one lookup tries (dials and asks),
	// those that do not answer included: the DHT lookup collects every
	// provider named (kad-dht's own stop at a count would end it on the
	// answer of one hostile server that names that many, real or made up).
	maxAttempts = 8 * MaxProviders
	// maxConcurrentAsks bounds the providers a lookup asks at once.
	maxConcurrentAsks = 8
	// connectTimeout bounds dialling one provider.
	connectTimeout = 10 * time.Second
	// minQuiet and maxQuiet bound the quiet period after which a provider
	// lookup stops (quietWindow, askProviders).
	minQuiet = 500 * time.Millisecond
	maxQuiet = 2 * time.Second
)

// FindCapability returns the live Things that offer the capability id
// (lmos:id, exactly as written). Unless the directory holds such a Thing
// and this node asked the network for the capability less than
// LookupFresh ago, it finds the capability's providers in the DHT
// (dht.CapabilityCID), asks each over the sync protocol for its Things
// with that capability (and connected peers over the find protocol),
// checks and stores what they send (as learned Things, which expire
// unless seen again) and answers from the directory then: what it held
// and what the network sent. Within the window it answers from the
// directory alone. An empty result with a nil error means nobody offers
// it. If ctx ends during the network lookup, it returns what the
// directory holds then, with ctx's error.
func (f *Federation) FindCapability(ctx context.Context, id string) ([]directory.Entry, error) {
	if id == "" {
		return nil, errors.New("federation: find capability: empty id")
	}
	q, form, flt := capabilityLookup(id)
	return f.find(ctx, "capability", q, form, flt)
}

// capabilityLookup is what a lookup of capability id asks: the
// directory's query (a trailing "@" ends the id with an empty version
// constraint, so an "@" inside the id is not read as one), the provider
// key's form and the providers' sync filter.
func capabilityLookup(id string) (directory.Query, string, Filter) {
	return directory.Query{Capability: id + "@"}, lmosproto.ProvideCapability + id, Filter{Capability: id}
}

// FindType is FindCapability for an @type as written in TDs (e.g.
// "lmos:Agent"), with provider key dht.TypeCID.
func (f *Federation) FindType(ctx context.Context, typ string) ([]directory.Entry, error) {
	if typ == "" {
		return nil, errors.New("federation: find type: empty type")
	}
	return f.find(ctx, "type", directory.Query{Type: typ}, lmosproto.ProvideType+typ, Filter{Type: typ})
}

// FindVendor is FindCapability for a vendor name (compared caselessly,
// dht.NormalizeVendor), with provider key dht.VendorCID.
func (f *Federation) FindVendor(ctx context.Context, name string) ([]directory.Entry, error) {
	if lmosdht.NormalizeVendor(name) == "" {
		return nil, errors.New("federation: find vendor: empty name")
	}
	return f.find(ctx, "vendor", directory.Query{Vendor: name}, lmosproto.ProvideVendor+lmosdht.NormalizeVendor(name), Filter{Vendor: name})
}

// LookupCapability asks the network for the Things that offer the
// capability id, as FindCapability does, and stores what it finds in the
// directory, but returns none of them: a caller that pages through the
// directory's answer itself (the WoT directory API) does not pay for every
// match. It asks unless the directory holds a match and this node asked
// for the capability less than LookupFresh ago.
func (f *Federation) LookupCapability(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("federation: lookup capability: empty id")
	}
	q, form, flt := capabilityLookup(id)
	return f.lookup(ctx, "capability", q, form, flt)
}

// find answers q from the directory after lookup.
func (f *Federation) find(ctx context.Context, what string, q directory.Query, form string, flt Filter) ([]directory.Entry, error) {
	lerr := f.lookup(ctx, what, q, form, flt)
	q.Visible = f.visible
	res, err := f.dir.Search(q)
	if err != nil {
		return nil, fmt.Errorf("federation: find %s: %w", what, err)
	}
	f.dir.Use(res.Entries...)
	return res.Entries, lerr
}

// lookup asks the network for the provider key of form (askProviders)
// unless the directory holds a match of q and the network was asked for
// the key less than LookupFresh ago (f.recent). A miss always asks. First
// it joins the key's shard (a light node) and fetches the records of the
// short announcements that name the key (fetchShorts). If ctx ends during
// the network lookup, it returns ctx's error.
func (f *Federation) lookup(ctx context.Context, what string, q directory.Query, form string, flt Filter) error {
	key := lmosdht.ProviderCID(form)
	f.useShard(form)
	f.fetchShorts(ctx, form)
	start := f.now()
	if f.p.DHT == nil {
		return nil
	}
	if f.recent.fresh(key, start) {
		q.Visible = f.visible
		held, err := f.dir.Holds(q)
		if err != nil {
			return fmt.Errorf("federation: find %s: %w", what, err)
		}
		if held {
			return nil
		}
	}
	asked, learned := f.askProviders(ctx, key, flt)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("federation: find %s %s: %w", what, key, err)
	}
	f.recent.asked(key, start)
	f.log.Debug("lookup asked the network", "what", what, "key", key, "providers", asked, "learned", learned)
	return nil
}

// askProviders asks the providers of key for their Things that flt
// selects (Sync), each as soon as the DHT lookup yields it, at most
// maxConcurrentAsks at once, while the lookup goes on, and returns how many
// it asked and how many records changed the directory once the lookup has
// ended and every provider found has answered.
//
// For a capability it also asks, at the same time as the lookup starts,
// up to maxHolders peers it is already connected to for the public records
// they hold of the Things that offer it (askHolders, proto.ProtocolFind),
// every one checked by the intake. A provider whose records arrived that
// way (and checked) is not asked; one whose records did not is, so that
// what a holder withholds still comes from its provider. While the holders
// have not answered, the providers found wait for them, at most a
// holdWindow after the first; an answer that comes later still spares the
// asks not started yet.
//
// The lookup ends when kad-dht's does, or earlier, once it has yielded a
// provider: when kad-dht's lookup reaches its end condition (the β closest
// peers it heard of answered) or runs out of peers to ask (ended), without
// the follow-up round that then asks the rest of the k closest (if no
// provider came by then, at the first that comes: the DHT's channel may
// yield one after the lookup's events said it ended); or after a quiet
// period with no new provider (quietWindow), for a lookup that walks on.
// The peers that hold a key's provider records are the k closest to it,
// so those that answered by the end condition named the providers the
// follow-up would name again, at the price of a connection to each peer
// it asks, which competes with the asks. A DHT server cannot bring the
// end condition on sooner by what it answers, but by being closer to the
// key than the honest peers (an eclipse, docs/security.md).
func (f *Federation) askProviders(ctx context.Context, key cid.Cid, flt Filter) (asked, learned int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lctx, stopLookup := context.WithCancel(ctx)
	defer stopLookup()
	lctx, events := kaddht.RegisterForLookupEvents(lctx)
	l := &providerAsks{f: f, key: key, flt: flt, start: time.Now(), answers: make(chan int)}
	if flt.Capability != "" {
		if peers := f.holders(); len(peers) > 0 {
			ch := make(chan heldAnswer, 1)
			l.held, l.wait = ch, true
			// Not waited for: a lookup that stops waiting returns and
			// cancels ctx, which ends the exchanges.
			go func() { ch <- f.askHolders(ctx, peers, flt.Capability) }()
		}
	}
	l.stopLookup = stopLookup
	l.provs = f.p.DHT.FindProvidersAsync(lctx, key, 0) // all: see maxAttempts
	l.quiet = time.NewTimer(maxQuiet)
	l.quiet.Stop()
	defer l.quiet.Stop()
	l.hold = time.NewTimer(maxQuiet)
	l.hold.Stop()
	defer l.hold.Stop()
	defer l.wg.Wait()
	for {
		if !l.wait {
			l.release()
		}
		l.startAsks(ctx)
		if l.provs == nil && l.pending == 0 && !l.wait {
			break
		}
		if l.wait && !l.holding && (l.provs == nil || len(l.waiting) > 0) {
			// Wait for the holders at most a window after the first
			// provider (or the end of the lookup).
			l.holding = true
			l.hold.Reset(holdWindow(time.Since(l.start)))
		}
		select {
		case ai, ok := <-l.provs:
			l.found(ai, ok)
		case a := <-l.held:
			l.heard(a)
		case <-l.hold.C:
			l.wait = false // ask the providers found; a later answer still counts
		case n := <-l.answers:
			l.running--
			l.pending--
			if n >= 0 {
				l.learned += n
				if l.answered++; l.answered >= MaxProviders {
					l.stop("enough providers answered")
				}
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
			} else if ended(ev) {
				l.ended = "kad-dht's lookup: " + ev.Terminate.Reason.String()
				l.stopIfEnded()
			}
		case <-l.quiet.C:
			l.stop("quiet window")
		}
	}
	if l.skipped > 0 {
		f.log.Debug("providers not asked: their records came from connected peers", "key", key, "providers", l.skipped)
	}
	if ctx.Err() != nil && l.stopped == endedByItself {
		l.stopped = "the caller gave up: " + ctx.Err().Error()
	}
	f.log.Debug("provider lookup done", "key", key, "providers", l.asked+l.skipped, "answered", l.answered,
		"first", l.first, "last", l.last, "stopped", l.stopped, "stoppedAfter", l.stoppedAt, "took", time.Since(l.start))
	return l.asked, l.learned
}

// providerAsks is the state of one askProviders: the providers found and
// what became of them, the answers of the connected peers asked, the
// lookup's timers. askProviders' goroutine alone changes it; the asks
// read f, key and flt and send on answers.
type providerAsks struct {
	f     *Federation
	key   cid.Cid
	flt   Filter
	start time.Time
	// provs yields the providers the lookup finds; nil once it has ended.
	provs <-chan peer.AddrInfo
	// held yields the connected peers' answer; nil if none were asked, or
	// their answer is in.
	held chan heldAnswer
	// answers yields the records each ask learned.
	answers chan int
	// stopLookup stops the DHT lookup; quiet does after a quiet window;
	// hold ends the wait for the holders.
	stopLookup  context.CancelFunc
	quiet, hold *time.Timer
	wg          sync.WaitGroup

	queue   []peer.AddrInfo // providers to ask
	waiting []peer.AddrInfo // providers found while waiting for the holders
	covered map[peer.ID]bool
	running int // asks running
	pending int // providers queued and not answered
	window  time.Duration
	ended   string // why kad-dht's lookup ended but for its follow-up (ended), if it did
	holding bool   // the hold timer runs
	wait    bool   // providers found wait for the holders

	// asked and learned are askProviders' results; skipped counts the
	// providers not asked as the holders covered them, answered those
	// asked that answered.
	asked, learned, skipped, answered int

	// For the lookup's summary in the log: when the first and the last
	// new provider came, and why and when the DHT lookup stopped.
	first, last, stoppedAt time.Duration
	stopped                string
}

// endedByItself is the summary's reason for a DHT lookup that ended
// without being stopped.
const endedByItself = "kad-dht's lookup ended by itself"

// stop stops the DHT lookup, for why, noted for the summary once.
func (l *providerAsks) stop(why string) {
	if l.stopped == "" {
		l.stopped, l.stoppedAt = why, time.Since(l.start)
	}
	l.stopLookup()
}

// release queues the providers that waited for the holders, but those
// whose records came from them.
func (l *providerAsks) release() {
	for _, ai := range l.waiting {
		if l.covered[ai.ID] {
			l.skipped++
			continue
		}
		l.queue = append(l.queue, ai)
		l.pending++
		l.asked++
	}
	l.waiting = nil
}

// startAsks asks the queued providers, at most maxConcurrentAsks at once.
func (l *providerAsks) startAsks(ctx context.Context) {
	for len(l.queue) > 0 && l.running < maxConcurrentAsks {
		ai := l.queue[0]
		l.queue = l.queue[1:]
		l.running++
		l.wg.Go(func() {
			n, err := l.f.askProvider(ctx, ai, l.flt)
			if err != nil {
				l.f.log.Debug("provider did not answer", "peer", ai.ID, "key", l.key, "err", err)
				n = -1
			}
			l.answers <- n
		})
	}
}

// found takes a provider the lookup yielded (ok false: the lookup ended):
// it waits to be asked, and the lookup stops after a quiet window with no
// other.
func (l *providerAsks) found(ai peer.AddrInfo, ok bool) {
	switch {
	case !ok:
		l.provs = nil
		l.quiet.Stop()
		if l.stopped == "" {
			l.stopped, l.stoppedAt = endedByItself, time.Since(l.start)
		}
		return
	case ai.ID == l.f.self || ai.ID == "", l.asked+len(l.waiting) >= maxAttempts:
		return
	}
	l.last = time.Since(l.start)
	if l.window == 0 {
		l.first = l.last
		l.window = quietFor(l.first)
		l.stopIfEnded()
	}
	l.quiet.Reset(l.window)
	l.waiting = append(l.waiting, ai)
}

// stopIfEnded stops the DHT lookup once kad-dht's ended (but for its
// follow-up) and it has yielded a provider, whichever came first: a
// provider the last answers named may reach the DHT's channel after the
// event that says the lookup ended.
func (l *providerAsks) stopIfEnded() {
	if l.ended != "" && l.window != 0 {
		l.stop(l.ended)
	}
}

// heard takes the connected peers' answer: the providers it covers are
// not asked, even after the wait.
func (l *providerAsks) heard(a heldAnswer) {
	l.held, l.wait = nil, false
	l.hold.Stop()
	l.covered = a.publishers
	l.learned += a.learned
	// An answer after the wait still spares the asks not started.
	l.queue = slices.DeleteFunc(l.queue, func(ai peer.AddrInfo) bool {
		if !l.covered[ai.ID] {
			return false
		}
		l.skipped++
		l.pending--
		l.asked--
		return true
	})
}

// holdWindow is how long the providers a lookup found after elapsed wait
// for the answers of the connected peers it asked at its start (which
// take about one round trip on a connection that exists, as the first
// provider does): as long again, within [2·minQuiet, maxQuiet].
func holdWindow(elapsed time.Duration) time.Duration {
	return min(max(elapsed, 2*minQuiet), maxQuiet)
}

// ended says whether ev tells that kad-dht's lookup reached its end
// condition (the β closest peers it heard of answered) or has no peer
// left to ask: what it does then is the follow-up round.
func ended(ev *kaddht.LookupEvent) bool {
	return ev.Terminate != nil && (ev.Terminate.Reason == kaddht.LookupCompleted || ev.Terminate.Reason == kaddht.LookupStarvation)
}

// quietFor is quietWindow; a test that must see a lookup end otherwise
// sets a longer one.
var quietFor = quietWindow

// quietWindow is how long a lookup that found its first provider after
// first goes on without finding another: half as long (at least one round
// of the lookup if that took two or more), within [minQuiet, maxQuiet].
func quietWindow(first time.Duration) time.Duration {
	return min(max(first/2, minQuiet), maxQuiet)
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
	n, err := f.Sync(ctx, ai.ID, flt)
	if err == nil {
		f.asked(ai.ID)
	}
	return n, err
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
	f.dir.Use(e)
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
	if _, err := f.intake.Store("dht", rec, directory.Used()); err != nil && !errors.Is(err, ErrNotNewer) && !errors.Is(err, errReplay) {
		return fmt.Errorf("federation: fetch thing %q of %s: %w", id, publisher, err)
	}
	return nil
}

// asked tells Deps.Asked of p, if set.
func (f *Federation) asked(p peer.ID) {
	if f.p.Asked != nil {
		f.p.Asked(p)
	}
}
