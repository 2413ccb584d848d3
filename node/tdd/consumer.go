package tdd

import (
	"net/http"
	"net/url"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ViewConsumer is the value of the listing's query parameter "view" that
// lists consumer views (Deps.ConsumerView) instead of the signed TDs:
// GET /things?view=consumer. The directory TD's things property reads
// this listing, so that WoT consumers exploring the directory (node-wot's
// exploreDirectory) get TDs they can consume.
const ViewConsumer = "consumer"

// listView checks the listing's "view" parameter: consumer reports
// whether the listing has consumer views.
func (h *Handler) listView(r *http.Request) (consumer bool, p *lmosproto.Problem) {
	v := r.URL.Query()["view"]
	switch {
	case len(v) == 0 || (len(v) == 1 && v[0] == ""):
		return false, nil
	case len(v) > 1:
		return false, httpapi.Problemf(http.StatusBadRequest, "query parameter view: given %d times, want at most once", len(v))
	case v[0] != ViewConsumer:
		return false, httpapi.Problemf(http.StatusBadRequest, "query parameter view: %q: want %q (or none for the signed TDs)", v[0], ViewConsumer)
	case h.deps.ConsumerView == nil:
		return false, &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: "query parameter view: this node serves no consumer views"}
	}
	return true, nil
}

// listItem is the listing's member for entry e, whose signed TD is raw:
// raw itself, or with consumer its consumer view; false if e has none
// (removed since the search), which the listing skips.
func (h *Handler) listItem(r *http.Request, consumer bool, e directory.Entry, raw []byte) ([]byte, bool) {
	if !consumer {
		return raw, true
	}
	view, err := h.deps.ConsumerView(r, e)
	if err != nil {
		h.log.Debug("no consumer view", "thing", e.ThingID, "publisher", e.Publisher, "err", err)
		return nil, false
	}
	return view, true
}

// consumerViewLink is the Link header value that leads from the signed
// TD of entry e, at path /things/{id}, to its consumer view; "" without
// consumer views.
func (h *Handler) consumerViewLink(r *http.Request, e directory.Entry) string {
	if h.deps.ConsumerView == nil {
		return ""
	}
	u := "/things/" + url.PathEscape(e.ThingID) + "/td"
	if r.URL.Query().Has("publisher") {
		u += "?" + url.Values{"publisher": {e.Publisher.String()}}.Encode()
	}
	return "<" + u + `>; rel="alternate"; type="` + ContentTypeTD + `"`
}
