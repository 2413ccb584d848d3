package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Things restricted to groups (lmos:groups) never travel on the public
// paths (announce topic, DHT, sync to anyone): Publish, Remove and
// republication hand them to Params.Scoped, which spreads them on the
// groups' topics; the group service passes what it receives there to
// AcceptScoped; sync serves them only to the peers Params.Allowed allows.

// Errors of group-scoped records, wrapped with the details.
var (
	// ErrNotMember: Publish of a TD naming a group this node is not a
	// member of (Params.MemberOf).
	ErrNotMember = errors.New("this node is not a member of the group")
	// ErrNotNewer: AcceptScoped got a record that is not newer than the
	// one held (a duplicate), or a tombstone of a Thing not held. A
	// gossip validator ignores it; every other error of AcceptScoped is a
	// reason to reject the message.
	ErrNotNewer = errors.New("not newer than the record held")
	// ErrNotPublisher: the record was sent by another peer than its
	// publisher.
	ErrNotPublisher = errors.New("sent by another peer than its publisher")
	// ErrWrongGroup: the record's TD (or, for a tombstone, the TD it
	// removes) does not name the group it arrived on.
	ErrWrongGroup = errors.New("the Thing does not name this group in lmos:groups")
)

// checkMember checks that this node is a member of every group td names.
func (f *Federation) checkMember(td *lmosproto.TD) error {
	var verrs lmosproto.ValidationErrors
	for i, g := range td.Groups {
		if f.p.MemberOf == nil || !f.p.MemberOf(g) {
			verrs = append(verrs, lmosproto.ValidationError{
				Pointer: fmt.Sprintf("/lmos:groups/%d", i),
				Message: fmt.Sprintf("this node is not a member of group %q; join it (lmosnode group join) or remove it from lmos:groups", g),
			})
		}
	}
	if len(verrs) > 0 {
		return fmt.Errorf("%w: %w", ErrNotMember, verrs)
	}
	return nil
}

// spreadScoped hands a group-scoped record to Params.Scoped. The caller
// holds pubMu.
func (f *Federation) spreadScoped(ctx context.Context, groups []string, rec *lmosproto.Record) {
	if f.p.Scoped == nil || len(groups) == 0 {
		return
	}
	if err := f.p.Scoped(ctx, slices.Clone(groups), rec.Raw); err != nil {
		f.log.Warn("spread group-scoped thing", "thing", rec.ThingID, "seq", rec.Seq, "groups", groups, "err", err)
		return
	}
	f.log.Debug("spread group-scoped thing", "thing", rec.ThingID, "seq", rec.Seq, "groups", groups, "tombstone", rec.Tombstone())
}

// allowed is Params.Allowed; nil allows no one.
func (f *Federation) allowed(groups []string, thingID string, p peer.ID) bool {
	return f.p.Allowed != nil && f.p.Allowed(groups, thingID, p)
}

// visible is the directory.Query.Visible of the lookups: public Things,
// own Things, and group-scoped Things this node may see.
func (f *Federation) visible(e directory.Entry) bool {
	return e.Groups == nil || e.Own || f.allowed(e.Groups, e.ThingID, f.self)
}

// AcceptScoped checks a group-scoped record that peer from sent on the
// topic of group and stores it: the record must check exactly like an
// announcement (size, proof, freshness, signed by from: the publisher must
// be the sender), its TD must name group in lmos:groups — for a tombstone,
// the TD it removes, as held here — and it must be newer than the record
// held (a lower seq is a replay). It returns nil for an accepted record,
// including this node's own (stored already by Publish); an error wrapping
// ErrNotNewer for a duplicate or a tombstone of a Thing not held (ignore
// it); any other error for a record to reject (ErrNotPublisher,
// ErrWrongGroup, a bad or forged proof, a replay, …). Whether from is a
// member of group is the caller's to check.
func (f *Federation) AcceptScoped(ctx context.Context, from peer.ID, group string, record []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("federation: accept scoped record: %w", err)
	}
	if err := from.Validate(); err != nil {
		return fmt.Errorf("federation: accept scoped record: sender: %w", err)
	}
	if group == "" {
		return errors.New("federation: accept scoped record: empty group")
	}
	rec, err := f.checkRecord(from, record)
	if err != nil {
		if errors.Is(err, lmosdht.ErrWrongPublisher) {
			err = fmt.Errorf("%w: %w", ErrNotPublisher, err)
		}
		return fmt.Errorf("federation: accept scoped record from %s: %w", from, err)
	}
	if rec.Tombstone() {
		held, ok := f.dir.Get(from, rec.ThingID)
		switch {
		case !ok:
			return fmt.Errorf("federation: accept scoped tombstone of %q from %s: no such Thing held: %w", rec.ThingID, from, ErrNotNewer)
		case !slices.Contains(held.Groups, group):
			return fmt.Errorf("federation: accept scoped tombstone of %q from %s: groups %v, not %q: %w", rec.ThingID, from, held.Groups, group, ErrWrongGroup)
		}
	} else if !slices.Contains(rec.TD.Groups, group) {
		return fmt.Errorf("federation: accept scoped thing %q from %s: groups %v, not %q: %w", rec.ThingID, from, rec.TD.Groups, group, ErrWrongGroup)
	}
	if from == f.self {
		return nil // our own: Publish stored it
	}
	change, err := f.dir.Put(rec, nil)
	switch {
	case errors.Is(err, directory.ErrStale):
		if held, ok := f.dir.Latest(from, rec.ThingID); ok && rec.Seq < held.Seq {
			return fmt.Errorf("federation: accept scoped thing %q from %s: seq %d, held %d: %w", rec.ThingID, from, rec.Seq, held.Seq, errReplay)
		}
		return fmt.Errorf("federation: accept scoped thing %q from %s: seq %d: %w", rec.ThingID, from, rec.Seq, ErrNotNewer)
	case err != nil:
		return fmt.Errorf("federation: accept scoped thing %q from %s: %w", rec.ThingID, from, err)
	case change == directory.Unchanged:
		return fmt.Errorf("federation: accept scoped thing %q from %s: seq %d: %w", rec.ThingID, from, rec.Seq, ErrNotNewer)
	}
	f.log.Debug("learned thing", "via", "group", "group", group, "thing", rec.ThingID, "publisher", from, "seq", rec.Seq, "change", change.String())
	return nil
}
