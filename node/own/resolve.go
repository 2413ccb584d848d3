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
// publisher of the id. Things this node may not see do not count. Its
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
	if visible == nil {
		visible = t.Visible
	}
	var hidden directory.Entry
	e, err := t.resolve(ctx, id, publisher, visible, &hidden)
	var p *lmosproto.Problem
	if call && errors.As(err, &p) && p.Status == http.StatusNotFound && len(hidden.Groups) > 0 {
		return directory.Entry{}, Forbidden(hidden)
	}
	return e, err
}

func (t *Things) resolve(ctx context.Context, id string, publisher peer.ID, visible func(directory.Entry) bool, hidden *directory.Entry) (directory.Entry, error) {
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
	p := &lmosproto.Problem{Status: http.StatusMultipleChoices, Title: http.StatusText(http.StatusMultipleChoices),
		Detail: fmt.Sprintf("Thing %q is published by %d peers and none is this node; choose one with ?publisher=", id, len(all))}
	for _, e := range all {
		p.Candidates = append(p.Candidates, lmosproto.Candidate{
			Publisher: e.Publisher.String(),
			Title:     e.Title,
			Modified:  e.Modified.UTC().Format(time.RFC3339),
		})
	}
	return directory.Entry{}, p
}
