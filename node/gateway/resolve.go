package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// fetchTimeout bounds a DHT fetch of a Thing named with ?publisher=.
const fetchTimeout = 10 * time.Second

// target is the Thing a request addresses.
type target struct {
	entry directory.Entry
	// pinned is set when the request named the publisher (?publisher=):
	// the URLs the gateway hands out keep naming it.
	pinned bool
}

// resolve finds the Thing {id} of r: ?publisher= selects that publisher;
// otherwise the node's own Thing wins; otherwise the single publisher of
// the id; several publishers are a 300 with candidates. Things that
// Deps.Visible hides do not count: if only such Things have the id, the
// answer is 404 as for an unknown Thing, or 403 Forbidden for a call.
func (h *Handler) resolve(r *http.Request, call bool) (target, *lmosproto.Problem) {
	t, p, hidden := h.resolveVisible(r)
	if p != nil && p.Status == http.StatusNotFound && call && len(hidden.Groups) > 0 {
		return target{}, forbidden(hidden)
	}
	return t, p
}

// forbidden is the answer to a call of a Thing restricted to groups that
// this node is not allowed to see.
func forbidden(e directory.Entry) *lmosproto.Problem {
	return &lmosproto.Problem{Status: http.StatusForbidden, Title: interact.TitleForbidden,
		Detail: fmt.Sprintf("Thing %q of %s is restricted to the groups %s, and this node may not call it",
			e.ThingID, e.Publisher, strings.Join(e.Groups, ", "))}
}

// visible reports whether this node's API shows e (Deps.Visible).
func (h *Handler) visible(e directory.Entry) bool {
	return h.deps.Visible == nil || h.deps.Visible(e)
}

// resolveVisible is resolve, and, when it fails with 404, a Thing with
// the id that Deps.Visible hid (zero if none).
func (h *Handler) resolveVisible(r *http.Request) (target, *lmosproto.Problem, directory.Entry) {
	id := r.PathValue("id")
	if s := r.URL.Query().Get("publisher"); s != "" {
		pub, err := lmosproto.ParsePublisher(s)
		if err != nil {
			return target{}, httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err), directory.Entry{}
		}
		e, ok := h.deps.Directory.Get(pub, id)
		if !ok && h.deps.Fetcher != nil && pub != h.deps.Self {
			ctx, cancel := context.WithTimeout(r.Context(), fetchTimeout)
			e, err = h.deps.Fetcher.FetchThing(ctx, pub, id)
			cancel()
			ok = err == nil
		}
		var hidden directory.Entry
		if ok && !h.visible(e) {
			ok, hidden = false, e
		}
		if !ok {
			return target{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleThingNotFound,
				Detail: fmt.Sprintf("no Thing %q published by %s", id, pub)}, hidden
		}
		return target{entry: e, pinned: true}, nil, directory.Entry{}
	}
	var all []directory.Entry
	var hidden directory.Entry
	for _, e := range h.deps.Directory.Lookup(id) {
		if h.visible(e) {
			all = append(all, e)
		} else if hidden.ThingID == "" {
			hidden = e
		}
	}
	switch {
	case len(all) == 0:
		return target{}, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleThingNotFound,
			Detail: fmt.Sprintf("no Thing %q in this node's directory", id)}, hidden
	case len(all) == 1 || all[0].Own: // Lookup puts the own Thing first
		return target{entry: all[0]}, nil, directory.Entry{}
	}
	p := httpapi.Problemf(http.StatusMultipleChoices, "Thing %q is published by %d peers and none is this node; choose one with ?publisher=", id, len(all))
	for _, e := range all {
		q := url.Values{"publisher": {e.Publisher.String()}}
		p.Candidates = append(p.Candidates, lmosproto.Candidate{
			Publisher: e.Publisher.String(),
			Title:     e.Title,
			Href:      r.URL.Path + "?" + q.Encode(),
		})
	}
	return target{}, p, directory.Entry{}
}

// invoker returns the Invoker of the Thing t: the engine for the node's
// own Things, the owner node over libp2p otherwise.
func (h *Handler) invoker(t target) interact.Invoker {
	if t.entry.Publisher == h.deps.Self {
		return h.deps.Local
	}
	return h.deps.Remote.Invoker(t.entry.Publisher)
}

// query is the query string that keeps addressing t in URLs the gateway
// hands out.
func (t target) query() string {
	if !t.pinned {
		return ""
	}
	return "?" + url.Values{"publisher": {t.entry.Publisher.String()}}.Encode()
}
