package gateway

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// target is the Thing a request addresses.
type target struct {
	entry directory.Entry
	// pinned is set when the request named the publisher (?publisher=):
	// the URLs the gateway hands out keep naming it.
	pinned bool
}

// resolve finds the Thing {id} of r (?publisher= pins the publisher) with
// Deps.Resolver, the node's one rule of which publisher serves a Thing;
// call tells a call from a read of the TD. Candidates of a 300 get the
// URL of this route for their publisher.
func (h *Handler) resolve(r *http.Request, call bool) (target, *lmosproto.Problem) {
	var pub peer.ID
	if s := r.URL.Query().Get("publisher"); s != "" {
		var err error
		if pub, err = lmosproto.ParsePublisher(s); err != nil {
			return target{}, httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err)
		}
	}
	e, err := h.deps.Resolver.Resolve(r.Context(), r.PathValue("id"), pub, call)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusInternalServerError, "resolving Thing %q: %v", r.PathValue("id"), err)
		}
		for i, c := range p.Candidates {
			p.Candidates[i].Href = r.URL.Path + "?" + url.Values{"publisher": {c.Publisher}}.Encode()
		}
		return target{}, p
	}
	return target{entry: e, pinned: pub != ""}, nil
}

// invoker returns the Invoker of the Thing t (Deps.Invokers).
func (h *Handler) invoker(t target) interact.Invoker {
	return h.deps.Invokers.For(t.entry.Publisher)
}

// query is the query string that keeps addressing t in URLs the gateway
// hands out.
func (t target) query() string {
	if !t.pinned {
		return ""
	}
	return "?" + url.Values{"publisher": {t.entry.Publisher.String()}}.Encode()
}
