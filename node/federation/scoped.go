package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Things restricted to groups (lmos:groups) never travel on the public
// paths (announce topic, DHT, sync to anyone): Publish, Remove and
// republication hand them to Deps.Scoped, which spreads them on the
// groups' topics; the group service passes what it receives there to
// Intake.AcceptScoped; sync serves them only to the peers Deps.Allowed allows.

// Errors of group-scoped records, wrapped with the details.
var (
	// ErrNotMember: Publish of a TD naming a group this node is not a
	// member of (Deps.MemberOf).
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

// spreadScoped hands a group-scoped record to Deps.Scoped. The caller
// holds pubMu.
func (f *Federation) spreadScoped(ctx context.Context, groups []string, rec *lmosproto.Record) {
	if f.p.Scoped == nil || len(groups) == 0 {
		return
	}
	if _, err := f.p.Scoped.PublishThing(ctx, slices.Clone(groups), rec.Raw); err != nil {
		f.log.Warn("spread group-scoped thing", "thing", rec.ThingID, "seq", rec.Seq, "groups", groups, "err", err)
		return
	}
	f.log.Debug("spread group-scoped thing", "thing", rec.ThingID, "seq", rec.Seq, "groups", groups, "tombstone", rec.Tombstone())
}

// allowed is Deps.Allowed; nil allows no one.
func (f *Federation) allowed(groups []string, thingID string, p peer.ID) bool {
	return f.p.Allowed != nil && f.p.Allowed(groups, thingID, p)
}

// visible is the directory.Query.Visible of the lookups: public Things,
// own Things, and group-scoped Things this node may see.
func (f *Federation) visible(e directory.Entry) bool {
	return e.Groups == nil || e.Own || f.allowed(e.Groups, e.ThingID, f.self)
}
