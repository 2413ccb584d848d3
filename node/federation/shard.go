package federation

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Role says which announce topics a node carries (docs/wire.md, "Announce
// shards"; the package documentation, "Shards").
type Role string

// The roles.
const (
	// RoleV1 carries proto.TopicAnnounce and proto.TopicPresence only,
	// as nodes did before the shards: it holds every Thing announced. It
	// is the zero value.
	RoleV1 Role = ""
	// RoleDirectory holds everything: it joins every shard and, while the
	// transition lasts (Config.NoLegacyAnnounce unset), relays the v1
	// topics too, and fetches the TD of every short announcement at once.
	RoleDirectory Role = "directory"
	// RoleLight carries only the shards of the Things it publishes and of
	// the capabilities it looked up in the last ShardIdle, stores of what
	// they bring only the Things of those capabilities (keeps), and
	// learns the rest on demand (DHT providers, find, fetch). It publishes
	// on the v1 topics while the transition lasts but does not subscribe
	// to them, and it does not sync with every peer it connects to.
	RoleLight Role = "light"
	// RoleAuto starts as RoleDirectory and becomes RoleLight for good
	// once the records it learned pass Config.LightPast bytes
	// (autoLight): a node holds the whole federation while that is
	// small, and what it serves and uses once it is large.
	RoleAuto Role = "auto"
)

// DefaultLightPast is Config.LightPast's default: half of a node's
// default budget of learned records (config.DefaultMaxLearnedBytes),
// about 50,000 typical TDs.
const DefaultLightPast = 128 << 20

// ParseRole parses "v1", "directory", "light" or "auto" ("" is RoleV1).
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleV1, RoleDirectory, RoleLight, RoleAuto:
		return r, nil
	case "v1":
		return RoleV1, nil
	}
	return "", fmt.Errorf("federation: role %q: want v1, directory, light or auto", s)
}

// role is the role the node plays now: a RoleAuto node's is
// RoleDirectory until autoLight makes it RoleLight.
func (f *Federation) role() Role {
	if f.cfg.Role != RoleAuto {
		return f.cfg.Role
	}
	if f.lit.Load() {
		return RoleLight
	}
	return RoleDirectory
}

// Role returns the role the node plays now: a RoleAuto node's is
// RoleDirectory, then RoleLight.
func (f *Federation) Role() Role { return f.role() }

// autoLight makes a RoleAuto node light once the records it learned pass
// Config.LightPast bytes: it stops relaying the v1 topics and syncing
// with every peer, leaves the shards that hold neither its own Things nor
// a capability it looked up in the last ShardIdle, and from then on
// stores of its shards only what a light node keeps. What it learned
// before stays until it expires or the budget evicts it. autoLoop asks
// every autoCheck.
func (f *Federation) autoLight() {
	if f.cfg.Role != RoleAuto || f.lit.Load() {
		return
	}
	held := f.dir.LearnedBytes()
	if held < f.cfg.LightPast {
		return
	}
	f.lit.Store(true)
	f.log.Warn("the federation outgrew this node: it now holds the Things it serves and uses (role light), not every Thing; set role to directory to hold every Thing",
		"learnedBytes", held, "lightPast", f.cfg.LightPast)
	f.mu.Lock()
	relay, prRelay := f.relay, f.prRelay
	f.relay, f.prRelay = nil, nil
	f.mu.Unlock()
	if relay != nil {
		relay()
	}
	if prRelay != nil {
		prRelay()
	}
	// The shards it joined as a directory node were never used (see
	// startShards): the sweep of a light node leaves them now.
	f.sweepShards()
}

// Shard membership.
const (
	// ShardIdle is how long a light node stays in a shard it joined for a
	// lookup after the last lookup of a key in it. The shards of its own
	// Things it never leaves while it publishes them.
	ShardIdle = 30 * time.Minute
	// shardSweep is how often idle shards are left.
	shardSweep = time.Minute
)

// errWrongShard: a record or short announcement on a shard its Thing does
// not belong to.
var errWrongShard = errors.New("announced on a shard its Thing does not belong to")

// shardForms returns the provider key forms that place a Thing in shards:
// its capabilities' if it has any, else all its forms (types, vendor).
// Types and vendors are shared by many Things (every agent is an
// lmos:Agent), so a Thing announced on their shards would put one shard
// on every node.
func shardForms(forms []string) []string {
	var caps []string
	for _, f := range forms {
		if len(f) > len(lmosproto.ProvideCapability) && f[:len(lmosproto.ProvideCapability)] == lmosproto.ProvideCapability {
			caps = append(caps, f)
		}
	}
	if len(caps) > 0 {
		return caps
	}
	return forms
}

// shardsOf returns the shards of a Thing with these provider key forms,
// ascending, without duplicates.
func shardsOf(forms []string) []int {
	var out []int
	for _, f := range shardForms(forms) {
		if n := lmosproto.ShardOf(f); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// tdForms returns the provider key forms of td (nil for nil).
func tdForms(td *lmosproto.TD) []string {
	if td == nil {
		return nil
	}
	caps := make([]string, len(td.Capabilities))
	for i, c := range td.Capabilities {
		caps[i] = c.ID
	}
	return lmosdht.ProviderForms(caps, td.Types, td.Vendor())
}

// entryForms returns the provider key forms of a directory entry's Thing.
func entryForms(e directory.Entry) []string {
	caps := make([]string, len(e.Capabilities))
	for i, c := range e.Capabilities {
		caps[i] = c.ID
	}
	return lmosdht.ProviderForms(caps, e.Types, e.Vendor)
}

// shardSub is a joined shard topic.
type shardSub struct {
	topic *pubsub.Topic
	relay pubsub.RelayCancelFunc
	used  time.Time // the last lookup of a key in the shard
}

// shardSet is the shards a node has joined.
type shardSet struct {
	mu   sync.Mutex
	subs [lmosproto.ShardCount]*shardSub
	// things is, per own Thing published in this run, its shards: a
	// tombstone travels on the shards of the Thing it removes.
	things map[string][]int
	// A light node keeps of what its shards bring only the Things it
	// uses (keeps): those with a key form it looked up in the last
	// ShardIdle (looked, when) or that places one of its own Things in
	// its shards (own, shardForms: its capabilities, not the type every
	// agent has; announceShards adds a Thing's, sweepShards rebuilds them
	// from the directory). The rest it checks and relays, and does not store.
	looked map[string]time.Time
	own    map[string]bool
}

// keeps reports whether a light node stores a Thing of key forms forms
// that came on a shard; a directory node stores all. The caller does not
// hold s.mu.
func (f *Federation) keeps(forms []string) bool {
	if f.role() != RoleLight {
		return true
	}
	now := f.now()
	s := &f.shards
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, form := range forms {
		if s.own[form] {
			return true
		}
		if t, ok := s.looked[form]; ok && now.Sub(t) < ShardIdle {
			return true
		}
	}
	return false
}

// keepsRecord is keeps for a record of publisher: a tombstone is kept if
// it removes a Thing the node holds.
func (f *Federation) keepsRecord(publisher peer.ID, rec *lmosproto.Record) bool {
	if rec.TD == nil {
		_, held := f.dir.Latest(publisher, rec.ThingID)
		return held
	}
	return f.keeps(tdForms(rec.TD))
}

// joinShard joins shard n (registers its validator, joins and relays its
// topic) unless joined, and dates its use now. The caller holds s.mu.
func (f *Federation) joinShard(n int, now time.Time) (*shardSub, error) {
	s := &f.shards
	if sub := s.subs[n]; sub != nil {
		sub.used = now
		return sub, nil
	}
	if f.ctx.Err() != nil {
		// Closing: closeShards has left, or is about to leave, them all.
		return nil, ErrClosed
	}
	name := lmosproto.ShardTopic(n)
	if err := f.p.PubSub.RegisterTopicValidator(name, f.validator("shard message", f.checkShard(n))); err != nil {
		return nil, fmt.Errorf("topic %s: validator: %w", name, err)
	}
	t, err := f.p.PubSub.Join(name)
	if err != nil {
		_ = f.p.PubSub.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("topic %s: %w", name, err)
	}
	relay, err := t.Relay()
	if err != nil {
		_ = t.Close()
		_ = f.p.PubSub.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("topic %s: relay: %w", name, err)
	}
	sub := &shardSub{topic: t, relay: relay, used: now}
	s.subs[n] = sub
	f.log.Debug("joined shard", "shard", n)
	return sub, nil
}

// leaveShard leaves shard n. The caller holds s.mu.
func (f *Federation) leaveShard(n int) error {
	sub := f.shards.subs[n]
	if sub == nil {
		return nil
	}
	f.shards.subs[n] = nil
	sub.relay()
	name := lmosproto.ShardTopic(n)
	err := errors.Join(sub.topic.Close(), f.p.PubSub.UnregisterTopicValidator(name))
	f.log.Debug("left shard", "shard", n, "err", err)
	return err
}

// sharded reports whether the node carries shards at all.
func (f *Federation) sharded() bool { return f.p.PubSub != nil && f.cfg.Role != RoleV1 }

// useShard joins the shard of a looked-up key form (a light node; a
// directory node has joined every shard) and dates its use.
func (f *Federation) useShard(form string) {
	if !f.sharded() || f.ctx.Err() != nil {
		return
	}
	f.shards.mu.Lock()
	defer f.shards.mu.Unlock()
	if _, ok := f.shards.looked[form]; ok || len(f.shards.looked) < maxLooked {
		f.shards.looked[form] = f.now()
	}
	if _, err := f.joinShard(lmosproto.ShardOf(form), f.now()); err != nil {
		f.log.Warn("join shard", "form", form, "err", err)
	}
}

// Shards returns the shards the node has joined, ascending.
func (f *Federation) Shards() []int {
	f.shards.mu.Lock()
	defer f.shards.mu.Unlock()
	var out []int
	for n, sub := range f.shards.subs {
		if sub != nil {
			out = append(out, n)
		}
	}
	return out
}

// maxLooked bounds the looked-up key forms a light node remembers.
const maxLooked = 4096

// ownShards returns the shards of the own live public Things and their
// key forms.
func (f *Federation) ownShards() (map[int]bool, map[string]bool) {
	shards, forms := make(map[int]bool), make(map[string]bool)
	for _, e := range f.dir.Own() {
		if e.Tombstone || len(e.Groups) > 0 {
			continue
		}
		sf := shardForms(entryForms(e))
		for _, form := range sf {
			shards[lmosproto.ShardOf(form)] = true
			forms[form] = true
		}
	}
	return shards, forms
}

// sweepShards leaves the shards a light node has not used for ShardIdle
// and that hold none of its own Things, and forgets the key forms it has
// not looked up for as long.
func (f *Federation) sweepShards() {
	if f.role() != RoleLight {
		return
	}
	own, forms := f.ownShards()
	now := f.now()
	f.shards.mu.Lock()
	defer f.shards.mu.Unlock()
	f.shards.own = forms
	for form, t := range f.shards.looked {
		if now.Sub(t) >= ShardIdle {
			delete(f.shards.looked, form)
		}
	}
	for n, sub := range f.shards.subs {
		if sub != nil && !own[n] && now.Sub(sub.used) >= ShardIdle {
			if err := f.leaveShard(n); err != nil {
				f.log.Warn("leave shard", "shard", n, "err", err)
			}
		}
	}
}

// shardLoop sweeps idle shards every shardSweep.
func (f *Federation) shardLoop() { f.every(shardSweep, f.sweepShards) }

// autoCheck is how often a RoleAuto node asks whether it is to become
// light: often, since a federation that loads fast fills the budget in
// seconds, and the question is one read of a counter.
const autoCheck = 2 * time.Second

// autoLoop makes a RoleAuto node light (autoLight) once it is to be.
func (f *Federation) autoLoop() {
	t := time.NewTicker(autoCheck)
	defer t.Stop()
	for !f.lit.Load() {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
			f.autoLight()
		}
	}
}

// startShards joins every shard for a directory node (and a RoleAuto one,
// which also sweeps once light and asks when to be: autoLoop).
func (f *Federation) startShards() error {
	if !f.sharded() {
		return nil
	}
	if f.role() == RoleDirectory {
		f.shards.mu.Lock()
		defer f.shards.mu.Unlock()
		for n := range lmosproto.ShardCount {
			// Joined for the role, not used: only a lookup, an own
			// Thing or its beats date a shard's use (a RoleAuto node
			// that turns light leaves the rest at once).
			if _, err := f.joinShard(n, time.Time{}); err != nil {
				return err
			}
		}
		if f.cfg.Role == RoleAuto {
			f.wg.Go(f.shardLoop)
			f.wg.Go(f.autoLoop)
		}
		return nil
	}
	_, forms := f.ownShards()
	f.shards.mu.Lock()
	f.shards.own = forms
	f.shards.mu.Unlock()
	f.wg.Go(f.shardLoop)
	return nil
}

// closeShards leaves every shard.
func (f *Federation) closeShards() error {
	f.shards.mu.Lock()
	defer f.shards.mu.Unlock()
	var errs []error
	for n := range f.shards.subs {
		errs = append(errs, f.leaveShard(n))
	}
	return errors.Join(errs...)
}
