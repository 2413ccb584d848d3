package own

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Owner implements interact.Owners for the router of the node's
// consumers (WebSocket, MQTT, an embedding program) with Resolve's rule:
// an error wrapping interact.ErrUnknownThing for an unknown Thing, else
// Resolve's problem (403, 300 with candidates).
func (t *Things) Owner(ctx context.Context, id string) (peer.ID, error) {
	e, err := t.Resolve(ctx, id, "", true)
	var p *lmosproto.Problem
	if errors.As(err, &p) && p.Status == http.StatusNotFound {
		return "", fmt.Errorf("thing %q: %w", id, interact.ErrUnknownThing)
	}
	if err != nil {
		return "", err
	}
	return e.Publisher, nil
}

// Forbidden is the answer to a call of e, a Thing restricted to groups
// that this node may not see.
func Forbidden(e directory.Entry) *lmosproto.Problem {
	return &lmosproto.Problem{Status: http.StatusForbidden, Title: interact.TitleForbidden,
		Detail: fmt.Sprintf("Thing %q of %s is restricted to the groups %s, and this node may not call it",
			e.ThingID, e.Publisher, strings.Join(e.Groups, ", "))}
}

// fetchTimeout bounds the DHT fetch of a Thing named with a publisher.
const fetchTimeout = 10 * time.Second

// Resolve returns the Thing id that a consumer of this node addresses
// (the HTTP binding, the directory API; call tells a call from a read of
// the TD). With a publisher named (?publisher=) it is that
// publisher's Thing, fetched from the DHT (Deps.Fetcher) when the
// directory lacks it; otherwise the node's own Thing first, else the one
// publisher of the id, else the one the trust list (Deps.Trust) ranks
// above the others (preferred over allowed over unknown). Things this node
// may not see and deny-listed publishers do not count (naming a denied
// publisher is 403). Its
// errors are *proto.Problem: 404 for an unknown Thing, 403 (Forbidden)
// for a call of a Thing only hidden ones have, 300 Multiple Choices with
// Candidates (Publisher, Title, Modified; the caller, who knows its
// routes, fills Href) when several publishers have the id and none is
// this node.
func (t *Things) Resolve(ctx context.Context, id string, publisher peer.ID, call bool) (directory.Entry, error) {
	return t.ResolveAs(ctx, id, publisher, call, nil)
}

// ResolveAs is Resolve for a caller whose view of the directory is
// visible (the directory API's per-request visibility); nil is Visible.
func (t *Things) ResolveAs(ctx context.Context, id string, publisher peer.ID, call bool, visible func(directory.Entry) bool) (directory.Entry, error) {
	if c, ok := interact.DIDCallerFrom(ctx); ok && visible == nil {
		visible = t.VisibleTo(c)
	}
	if visible == nil {
		visible = t.Visible
	}
	var hidden directory.Entry
	e, err := t.resolve(ctx, id, publisher, visible, &hidden)
	var p *lmosproto.Problem
	if call && errors.As(err, &p) && p.Status == http.StatusNotFound && len(hidden.Groups) > 0 {
		return directory.Entry{}, Forbidden(hidden)
	}
	if call && err == nil {
		// Invoked: the directory's budget keeps it before unused Things.
		t.deps.Directory.Use(e)
	}
	return e, err
}

func (t *Things) resolve(ctx context.Context, id string, publisher peer.ID, visible func(directory.Entry) bool, hidden *directory.Entry) (directory.Entry, error) {
	if publisher != "" && t.rank(publisher) == trust.RankDenied {
		return directory.Entry{}, &lmosproto.Problem{Status: http.StatusForbidden, Title: interact.TitleForbidden,
			Detail: fmt.Sprintf("publisher %s is deny-listed in this node's trust list", publisher)}
	}
	if publisher != "" {
		e, ok := t.deps.Directory.Get(publisher, id)
		if !ok && t.deps.Fetcher != nil && publisher != t.deps.Self {
			fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
			var err error
			e, err = t.deps.Fetcher.FetchThing(fctx, publisher, id)
			cancel()
			ok = err == nil
		}
		if ok && !visible(e) {
			ok, *hidden = false, e
		}
		if !ok {
			return directory.Entry{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleThingNotFound,
				Detail: fmt.Sprintf("no Thing %q published by %s", id, publisher)}
		}
		return e, nil
	}
	var all []directory.Entry
	for _, e := range t.deps.Directory.Lookup(id) {
		if t.rank(e.Publisher) == trust.RankDenied {
			continue
		}
		if visible(e) {
			all = append(all, e)
		} else if hidden.ThingID == "" {
			*hidden = e
		}
	}
	switch {
	case len(all) == 0:
		return directory.Entry{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleThingNotFound,
			Detail: fmt.Sprintf("no Thing %q in this node's directory", id)}
	case len(all) == 1 || all[0].Own: // Lookup puts the own Thing first
		return all[0], nil
	}
	if e, ok := t.best(all); ok {
		return e, nil
	}
	p := &lmosproto.Problem{Status: http.StatusMultipleChoices, Title: http.StatusText(http.StatusMultipleChoices),
		Detail: fmt.Sprintf("Thing %q is published by %d peers and none is this node; choose one with ?publisher=", id, len(all))}
	for _, e := range all {
		c := lmosproto.Candidate{
			Publisher: e.Publisher.String(),
			Title:     e.Title,
			Modified:  e.Modified.UTC().Format(time.RFC3339),
		}
		if t.deps.Trust != nil {
			c.Trust = string(t.deps.Trust.Mark(e.Publisher))
		}
		p.Candidates = append(p.Candidates, c)
	}
	return directory.Entry{}, p
}

// rank is p's rank in the trust list (trust.RankUnknown without one).
func (t *Things) rank(p peer.ID) int {
	if t.deps.Trust == nil {
		return trust.RankUnknown
	}
	return t.deps.Trust.Rank(p)
}

// best returns the one Thing of all whose publisher ranks highest in the
// trust list, if that rank is above unknown and no other publisher shares
// it: a preferred publisher wins over allowed and unknown ones, an allowed
// one over unknown ones.
func (t *Things) best(all []directory.Entry) (directory.Entry, bool) {
	top, n := trust.RankUnknown, 0
	var best directory.Entry
	for _, e := range all {
		switch r := t.rank(e.Publisher); {
		case r > top:
			top, n, best = r, 1, e
		case r == top:
			n++
		}
	}
	return best, top > trust.RankUnknown && n == 1
}
