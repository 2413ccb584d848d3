package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Intake is the one way a record of another publisher enters the
// directory, whichever path brought it: the announce topic, a sync, a DHT
// lookup or a group topic. It checks the record (size, proof, TD or
// tombstone, freshness, signed by the publisher named) and stores it as
// learned, with one mapping of what the directory answers: a record older
// than the one held is a replay (errReplay), one no newer a duplicate
// (ErrNotNewer), and one that would take its publisher over its quota in
// this directory (directory.Config.MaxThingsPerPublisher,
// MaxBytesPerPublisher) is refused with an error wrapping
// directory.ErrQuota, the records held staying as they are. It also tells
// the directory when a publisher was seen alive (Seen). The node builds it
// before the group service and the federation, which both hand it records.
// It is safe for concurrent use.
type Intake struct {
	self      peer.ID
	dir       *directory.Directory
	validator lmosdht.ThingValidator
	admit     func(peer.ID) bool
	log       *slog.Logger
	now       func() time.Time
}

// ErrNotAdmitted: the operator's trust list refuses the record's publisher
// (deny-listed, or not trusted under onlyTrusted). The record is dropped;
// the announce validator ignores it (not relayed, no penalty for the peer
// that relayed it, which may not share the list).
var ErrNotAdmitted = errors.New("publisher refused by this node's trust list")

// IntakeDeps are what an Intake works with.
type IntakeDeps struct {
	// Directory receives the records. Required.
	Directory *directory.Directory
	// Self is the node's peer ID: its own records are never learned.
	// Required.
	Self peer.ID
	// Validator checks the records; its zero value uses the protocol's
	// limits and the system clock. The node shares one (with its cache of
	// verified records) with the DHT.
	Validator lmosdht.ThingValidator
	// Admit, if set, tells whether records of a publisher may enter the
	// directory (the trust list: trust.List.Admits); nil admits every
	// publisher.
	Admit func(peer.ID) bool
}

// NewIntake returns the Intake of deps; of the options it takes
// WithLogger and WithClock (which dates sightings, Seen).
func NewIntake(deps IntakeDeps, opts ...Option) (*Intake, error) {
	if deps.Directory == nil {
		return nil, errors.New("federation: IntakeDeps.Directory is nil")
	}
	if err := deps.Self.Validate(); err != nil {
		return nil, fmt.Errorf("federation: IntakeDeps.Self: %w", err)
	}
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return &Intake{self: deps.Self, dir: deps.Directory, validator: deps.Validator, admit: deps.Admit, log: o.log, now: o.now}, nil
}

// Seen tells the directory that publisher p was seen alive now: a message
// it authored, a sync it answered, a connection to it (Entry.Online).
func (in *Intake) Seen(p peer.ID) {
	if p != in.self {
		in.dir.Seen(p, in.now())
	}
}

// Check checks raw as a record published by publisher: size, proof, TD or
// tombstone, freshness, and that publisher signed it
// (dht.ThingValidator.CheckFrom: one parse of the bytes, the verified
// record cached). A publisher the trust list refuses is an error wrapping
// ErrNotAdmitted, before any of that.
func (in *Intake) Check(publisher peer.ID, raw []byte) (*lmosproto.Record, error) {
	if err := in.Admits(publisher); err != nil {
		return nil, err
	}
	return in.validator.CheckFrom(publisher, raw)
}

// Signed tells the intake that rec is a record this node signed (with
// proto.SignThing or proto.SignTombstone, which verify what they sign):
// the validator's cache of verified records holds it, so the node's own
// announcement is not verified again on its way out.
func (in *Intake) Signed(rec *lmosproto.Record) {
	in.validator.Cache.Hold(rec)
}

// CheckKey checks raw as the value of the DHT record key.
func (in *Intake) CheckKey(key string, raw []byte) (*lmosproto.Record, error) {
	return in.validator.Check(key, raw)
}

// Retired returns why the key of publisher no longer signs (revoked, or
// rotated away from: dht.ThingValidator.Retired), or nil. What such a key
// signs is refused as its records are: short announcements and presence
// beats too.
func (in *Intake) Retired(publisher peer.ID) error {
	if in.validator.Retired == nil {
		return nil
	}
	if err := in.validator.Retired(publisher); err != nil {
		return fmt.Errorf("%w: %s: %w", lmosdht.ErrRetiredKey, publisher, err)
	}
	return nil
}

// Admits returns nil if the trust list lets records of publisher in, else
// an error wrapping ErrNotAdmitted.
func (in *Intake) Admits(publisher peer.ID) error {
	if in.admit != nil && !in.admit(publisher) {
		return fmt.Errorf("%s: %w", publisher, ErrNotAdmitted)
	}
	return nil
}

// Store stores rec, a checked record of another publisher that arrived
// via a path ("gossip", "dht", "group"), and returns what changed. A
// record older than the one held is an error wrapping errReplay; one no
// newer (a duplicate) an error wrapping ErrNotNewer; one of a publisher
// the trust list refuses an error wrapping ErrNotAdmitted; one over its
// publisher's quota an error wrapping directory.ErrQuota; one the node's
// budget for learned records refuses an error wrapping
// directory.ErrBudget. opts qualify the record (directory.Used for one
// learned for a lookup).
func (in *Intake) Store(via string, rec *lmosproto.Record, opts ...directory.PutOption) (directory.Change, error) {
	if err := in.Admits(rec.Publisher()); err != nil {
		return directory.Unchanged, fmt.Errorf("thing %q: %w", rec.ThingID, err)
	}
	change, err := in.dir.Put(rec, nil, opts...)
	switch {
	case errors.Is(err, directory.ErrStale):
		if held, ok := in.dir.Latest(rec.Publisher(), rec.ThingID); ok && rec.Seq < held.Seq {
			return change, fmt.Errorf("thing %q of %s: seq %d, held %d: %w", rec.ThingID, rec.Publisher(), rec.Seq, held.Seq, errReplay)
		}
		return change, fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, rec.Publisher(), rec.Seq, ErrNotNewer)
	case errors.Is(err, directory.ErrQuota), errors.Is(err, directory.ErrBudget):
		in.log.Debug("learned record refused", "via", via, "thing", rec.ThingID, "publisher", rec.Publisher(), "err", err)
		return change, err
	case err != nil:
		in.log.Warn("store learned record", "via", via, "thing", rec.ThingID, "publisher", rec.Publisher(), "err", err)
		return change, fmt.Errorf("thing %q of %s: %w", rec.ThingID, rec.Publisher(), err)
	case change == directory.Unchanged:
		return change, fmt.Errorf("thing %q of %s: seq %d: %w", rec.ThingID, rec.Publisher(), rec.Seq, ErrNotNewer)
	}
	in.log.Debug("learned thing", "via", via, "thing", rec.ThingID, "publisher", rec.Publisher(), "seq", rec.Seq, "change", change.String())
	return change, nil
}

// StoreMany stores checked records in one batch (a sync answer) and
// returns how many changed the directory; records no newer than those
// held, those over their publisher's quota and those the budget for
// learned records refuses are skipped (the latter two logged). opts
// qualify the records (directory.Used for those learned for a lookup).
func (in *Intake) StoreMany(recs []*lmosproto.Record, opts ...directory.PutOption) (int, error) {
	recs = slices.DeleteFunc(slices.Clone(recs), func(r *lmosproto.Record) bool { return in.Admits(r.Publisher()) != nil })
	if len(recs) == 0 {
		return 0, nil
	}
	changes, err := in.dir.PutMany(recs, opts...)
	if err != nil {
		return 0, err
	}
	n, over, budget := 0, 0, 0
	for _, c := range changes {
		switch c {
		case directory.Unchanged, directory.Stale:
		case directory.OverQuota:
			over++
		case directory.OverBudget:
			budget++
		default:
			n++
		}
	}
	if over > 0 {
		in.log.Info("learned records over quota refused", "publisher", recs[0].Publisher(), "refused", over, "of", len(recs))
	}
	if budget > 0 {
		// Expected under a flood of little-valued records: not an incident.
		in.log.Debug("learned records over the budget refused", "refused", budget, "of", len(recs))
	}
	return n, nil
}

// ValidateScoped is AcceptScoped as a group topic's validator decides
// (groupsvc.Things): a record stored is accepted; a duplicate, a tombstone
// of a Thing not held and a record of a publisher the trust list refuses
// are ignored; any other is rejected (it costs the peer that sent it).
func (in *Intake) ValidateScoped(ctx context.Context, from peer.ID, group string, record []byte) (pubsub.ValidationResult, error) {
	err := in.AcceptScoped(ctx, from, group, record)
	switch {
	case err == nil:
		return pubsub.ValidationAccept, nil
	case errors.Is(err, ErrNotNewer), errors.Is(err, ErrNotAdmitted), errors.Is(err, directory.ErrBudget):
		// A record refused for this node's memory is valid: not the
		// sender's fault.
		return pubsub.ValidationIgnore, err
	}
	return pubsub.ValidationReject, err
}

// AcceptScoped checks a group-scoped record that peer from sent on the
// topic of group and stores it: the record must
// check like an announcement (size, proof, freshness, signed by from: the
// publisher must be the sender), its TD must name group in lmos:groups —
// for a tombstone, the TD it removes, as held here — and it must be newer
// than the record held (a lower seq is a replay). It returns nil for an
// accepted record, including this node's own (stored already by
// Publish); an error wrapping ErrNotNewer for a duplicate or a tombstone
// of a Thing not held (ignore it); any other error for a record to reject
// (ErrNotPublisher, ErrWrongGroup, a bad or forged proof, a replay, …).
// Whether from is a member of group is the caller's to check.
func (in *Intake) AcceptScoped(ctx context.Context, from peer.ID, group string, record []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("federation: accept scoped record: %w", err)
	}
	if err := from.Validate(); err != nil {
		return fmt.Errorf("federation: accept scoped record: sender: %w", err)
	}
	if group == "" {
		return errors.New("federation: accept scoped record: empty group")
	}
	rec, err := in.Check(from, record)
	if err != nil {
		if errors.Is(err, lmosdht.ErrWrongPublisher) {
			err = fmt.Errorf("%w: %w", ErrNotPublisher, err)
		}
		return fmt.Errorf("federation: accept scoped record from %s: %w", from, err)
	}
	if rec.Tombstone() {
		held, ok := in.dir.Get(from, rec.ThingID)
		switch {
		case !ok:
			return fmt.Errorf("federation: accept scoped tombstone of %q from %s: no such Thing held: %w", rec.ThingID, from, ErrNotNewer)
		case !slices.Contains(held.Groups, group):
			return fmt.Errorf("federation: accept scoped tombstone of %q from %s: groups %v, not %q: %w", rec.ThingID, from, held.Groups, group, ErrWrongGroup)
		}
	} else if !slices.Contains(rec.TD.Groups, group) {
		return fmt.Errorf("federation: accept scoped thing %q from %s: groups %v, not %q: %w", rec.ThingID, from, rec.TD.Groups, group, ErrWrongGroup)
	}
	if from == in.self {
		return nil // our own: Publish stored it
	}
	if _, err := in.Store("group "+group, rec); err != nil {
		return fmt.Errorf("federation: accept scoped record from %s: %w", from, err)
	}
	return nil
}
