package federation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Short announcements (docs/wire.md, "Announce shards").
const (
	// DefaultShortBudget is the largest signed record announced in full on
	// a shard; a larger one is announced short. A short announcement of
	// a TD with a few capabilities is 250–400 bytes, so below about 1 KiB
	// the full record costs the shard about what the short one does and
	// spares every holder the fetch; above it, every node of the shard
	// would carry bytes that only those that query need.
	DefaultShortBudget = 1 << 10
	// MaxShortSize is the largest short announcement accepted.
	MaxShortSize = 8 << 10
	// maxShortKeys bounds the provider key forms of a short announcement.
	maxShortKeys = 64
)

// errBadShort: a short announcement that is malformed.
var errBadShort = errors.New("malformed short announcement")

// shortAnnouncement names the newest version of a Thing without its TD:
// who publishes it, its id, seq and the SHA-256 of the signed record (hex),
// and its provider key forms (dht.ProviderForms), which say which queries
// need it and which shards it belongs to.
type shortAnnouncement struct {
	Publisher string   `json:"publisher"`
	ID        string   `json:"id"`
	Seq       uint64   `json:"seq"`
	Hash      string   `json:"hash"`
	Keys      []string `json:"keys"`
}

// shardMessage is a message on a shard topic other than a record: exactly
// one member set.
type shardMessage struct {
	Short *shortAnnouncement `json:"lmos:short,omitempty"`
	Beat  *presence          `json:"lmos:beat,omitempty"`
}

// recordHash is the hash a short announcement names: SHA-256 of the
// signed record's bytes, lowercase hex.
func recordHash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// checkShard returns the validator of shard n's topic. A message is a
// short announcement ({"lmos:short": …}), a presence beat
// ({"lmos:beat": …}), or else a signed record, checked as on
// proto.TopicAnnounce and also for belonging to shard n.
func (f *Federation) checkShard(n int) func(*pubsub.Message) (pubsub.ValidationResult, error) {
	return func(msg *pubsub.Message) (pubsub.ValidationResult, error) {
		data := msg.GetData()
		if len(data) > lmosproto.MaxRecordSize {
			return pubsub.ValidationReject, fmt.Errorf("%w: %d bytes, the limit is %d", lmosdht.ErrTooLarge, len(data), lmosproto.MaxRecordSize)
		}
		var m shardMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return pubsub.ValidationReject, fmt.Errorf("%w: %w", lmosdht.ErrBadRecord, err)
		}
		switch {
		case m.Short != nil:
			return f.checkShort(msg, n, *m.Short)
		case m.Beat != nil:
			if len(data) > MaxPresenceSize {
				return pubsub.ValidationReject, fmt.Errorf("%w: presence beat of %d bytes, the limit is %d", lmosdht.ErrTooLarge, len(data), MaxPresenceSize)
			}
			return f.checkBeat(msg.GetFrom(), *m.Beat, true)
		}
		return f.checkRecord(msg, n)
	}
}

// checkShort is the validator's answer to a short announcement s on shard
// n: Reject for one too large, malformed, of another publisher than its
// author, not of shard n or of a retired key; Ignore for one older than what this node holds
// or was told; Accept otherwise, after noting it (a directory node
// fetches its record at once, a light one when a query needs it).
func (f *Federation) checkShort(msg *pubsub.Message, n int, s shortAnnouncement) (pubsub.ValidationResult, error) {
	if len(msg.GetData()) > MaxShortSize {
		return pubsub.ValidationReject, fmt.Errorf("%w: short announcement of %d bytes, the limit is %d", lmosdht.ErrTooLarge, len(msg.GetData()), MaxShortSize)
	}
	author := msg.GetFrom()
	if err := author.Validate(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("author: %w", err)
	}
	if s.Publisher != author.String() {
		return pubsub.ValidationReject, fmt.Errorf("short announcement of %s names %q: %w", author, s.Publisher, errNotAuthor)
	}
	if err := s.check(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("from %s: %w", author, err)
	}
	if !slices.Contains(shardsOf(s.Keys), n) {
		return pubsub.ValidationReject, fmt.Errorf("from %s: thing %q on shard %d: %w", author, s.ID, n, errWrongShard)
	}
	if author == f.self {
		return pubsub.ValidationAccept, nil
	}
	if err := f.intake.Retired(author); err != nil {
		return pubsub.ValidationReject, err
	}
	ref := thingRef{author, s.ID}
	if held, ok := f.dir.Latest(author, s.ID); ok && held.Seq >= s.Seq {
		if held.Seq > s.Seq {
			return pubsub.ValidationIgnore, fmt.Errorf("thing %q of %s: seq %d, held %d: %w", s.ID, author, s.Seq, held.Seq, ErrNotNewer)
		}
		// The version held, announced again (republication): forward it.
		return pubsub.ValidationAccept, nil
	}
	if !f.keeps(s.Keys) {
		// A light node's shard named a Thing it does not use: relayed,
		// not noted.
		return pubsub.ValidationAccept, nil
	}
	if !f.shorts.add(ref, s) {
		return pubsub.ValidationIgnore, fmt.Errorf("thing %q of %s: seq %d: %w", s.ID, author, s.Seq, ErrNotNewer)
	}
	if f.role() == RoleDirectory {
		f.queueFetch(ref)
	}
	return pubsub.ValidationAccept, nil
}

// check reports what is malformed in s.
func (s shortAnnouncement) check() error {
	switch {
	case s.ID == "":
		return fmt.Errorf("%w: no id", errBadShort)
	case s.Seq == 0:
		return fmt.Errorf("%w: thing %q: seq 0", errBadShort, s.ID)
	case len(s.Keys) == 0 || len(s.Keys) > maxShortKeys:
		return fmt.Errorf("%w: thing %q: %d keys, want 1 to %d", errBadShort, s.ID, len(s.Keys), maxShortKeys)
	}
	if b, err := hex.DecodeString(s.Hash); err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != s.Hash {
		return fmt.Errorf("%w: thing %q: hash %q: want %d bytes in lowercase hex", errBadShort, s.ID, s.Hash, sha256.Size)
	}
	return nil
}

// announceShards announces rec on the shards of its Thing (shardData). A
// tombstone goes to the shards of the Thing it removes, if this node
// announced that Thing in this run. The caller holds pubMu.
func (f *Federation) announceShards(ctx context.Context, rec *lmosproto.Record) {
	if !f.sharded() {
		return
	}
	var shards []int
	var forms []string
	f.shards.mu.Lock()
	if rec.TD != nil {
		forms = tdForms(rec.TD)
		shards = shardsOf(forms)
		f.shards.things[rec.ThingID] = shards
		for _, form := range shardForms(forms) {
			f.shards.own[form] = true
		}
	} else {
		shards = f.shards.things[rec.ThingID]
		delete(f.shards.things, rec.ThingID)
	}
	topics := make([]*pubsub.Topic, 0, len(shards))
	for _, n := range shards {
		sub, err := f.joinShard(n, f.now())
		if err != nil {
			f.log.Warn("join shard", "shard", n, "err", err)
			continue
		}
		topics = append(topics, sub.topic)
	}
	f.shards.mu.Unlock()
	data := f.shardData(rec)
	if data == nil {
		return
	}
	for _, t := range topics {
		peers := t.ListPeers()
		if err := t.Publish(ctx, data); err != nil {
			f.log.Warn("announce thing on shard", "thing", rec.ThingID, "topic", t.String(), "err", err)
			continue
		}
		f.noteSent(t, true, rec, peers)
	}
}

// shardData is what announces rec on a shard: the record itself if it
// fits Config.ShortBudget, else a short announcement (nil if that cannot
// be encoded).
func (f *Federation) shardData(rec *lmosproto.Record) []byte {
	if rec.TD == nil || len(rec.Raw) <= f.cfg.ShortBudget {
		return rec.Raw
	}
	data, err := json.Marshal(shardMessage{Short: &shortAnnouncement{
		Publisher: f.self.String(), ID: rec.ThingID, Seq: rec.Seq, Hash: recordHash(rec.Raw), Keys: tdForms(rec.TD),
	}})
	if err != nil {
		f.log.Error("short announcement", "thing", rec.ThingID, "err", err)
		return nil
	}
	return data
}

// beatShards sends a presence beat on the shards of the own Things.
func (f *Federation) beatShards(beat presence) {
	if !f.sharded() {
		return
	}
	data, err := json.Marshal(shardMessage{Beat: &beat})
	if err != nil {
		f.log.Error("presence beat", "err", err)
		return
	}
	own, _ := f.ownShards()
	f.shards.mu.Lock()
	var topics []*pubsub.Topic
	for n := range own {
		// Joined already when the Thing was announced; rejoined here
		// after a restart.
		if sub, err := f.joinShard(n, f.now()); err == nil {
			topics = append(topics, sub.topic)
		}
	}
	f.shards.mu.Unlock()
	for _, t := range topics {
		if err := t.Publish(f.ctx, data); err != nil && f.ctx.Err() == nil {
			f.log.Debug("presence beat on shard", "topic", t.String(), "err", err)
		}
	}
}

// inShard reports whether rec may travel on shard n: a tombstone on any
// (it names no capability), a TD on the shards of its Thing.
func inShard(rec *lmosproto.Record, n int) bool {
	return rec.TD == nil || slices.Contains(shardsOf(tdForms(rec.TD)), n)
}
