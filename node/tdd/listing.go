package tdd

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// DiscoveryContext is the JSON-LD context of the WoT Discovery vocabulary:
// the @context of a ThingCollection, and the entry an Enriched TD adds to
// its @context.
const DiscoveryContext = "https://www.w3.org/2022/wot/discovery"

// listThings serves GET /things: the Things the caller may see that match
// the filters, ordered (by id unless sort_by or q say otherwise), one page
// of them as a JSON array or a ThingCollection, with Link headers to the
// next page and to the collection (canonical, with an etag of its state).
func (h *Handler) listThings(w http.ResponseWriter, r *http.Request) {
	lq, consumer, p := h.listRequest(r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	tag := h.deps.Directory.Revision() // before the search: a change after it changes the tag
	lr, p := h.listPage(r, lq)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	lp, ok := h.listMembers(w, r, lq, consumer, lr.page)
	if !ok {
		return
	}

	next := ""
	switch {
	case lr.byID && lp.consumed > 0 && (lp.consumed < len(lr.page) || lr.more):
		// The directory's own order: the next page continues after the
		// last entry served, by cursor, at the cost of the first page.
		next = h.pageURL(r, "cursor", lr.q.CursorAfter(lr.page[lp.consumed-1]), lq.limit)
	case !lr.byID && lq.offset+lp.consumed < lr.total:
		next = h.pageURL(r, "offset", strconv.Itoa(lq.offset+lp.consumed), lq.limit)
	}
	if next != "" {
		w.Header().Add("Link", "<"+next+`>; rel="next"`)
	}
	w.Header().Add("Link", "<"+h.base(r)+`/things>; rel="canonical"; etag="`+tag+`"`)
	w.Header().Set(HeaderOnline, strings.Join(lp.online, ", "))
	if h.deps.Orgs != nil {
		w.Header().Set(HeaderOrganization, strings.Join(lp.orgs, ", "))
	}
	if h.deps.Trust != nil {
		w.Header().Set(HeaderTrust, strings.Join(lp.marks, ", "))
	}

	var buf bytes.Buffer
	if lq.collection {
		self := h.pageURL(r, "offset", strconv.Itoa(lq.offset), lq.limit)
		if lq.cursor != "" {
			self = h.pageURL(r, "cursor", lq.cursor, lq.limit)
		}
		writeCollection(&buf, self, next, lr.total, lp.members)
	} else {
		buf.WriteByte('[')
		buf.Write(bytes.Join(lp.members, []byte{','}))
		buf.WriteString("]\n")
	}
	writeBody(w, r, buf.Bytes(), ContentTypeLDJSON, ContentTypeJSON)
}

// listRequest checks a listing request: its query (parseListQuery), its
// view (consumer views or signed TDs) and that they go together. The
// query sees what r's caller may see, the trust list's publishers first.
func (h *Handler) listRequest(r *http.Request) (lq listQuery, consumer bool, p *lmosproto.Problem) {
	if lq, p = h.parseListQuery(r); p != nil {
		return lq, false, p
	}
	if consumer, p = h.listView(r); p != nil {
		return lq, false, p
	}
	if consumer && lq.enriched {
		return lq, false, httpapi.Problemf(http.StatusBadRequest, "query parameters view=%s and enriched=true: a consumer view is not an Enriched TD; ask for one of them", ViewConsumer)
	}
	lq.q.Visible = h.visible(r)
	if h.deps.Trust != nil {
		lq.q.Rank = h.listRank
	}
	return lq, consumer, nil
}

// listResult is a listing's page of entries before it is served.
type listResult struct {
	page []directory.Entry
	// total counts the matches; more is set when the directory has
	// matches after page (byID only).
	total int
	more  bool
	// byID: the directory paged the listing itself, in id order, with
	// query q.
	byID bool
	q    directory.Query
}

// listPage searches for the listing lq and returns its page of entries
// and the number of matches. The directory pages every order: by id (from
// lq's cursor or offset), by relevance for free text without sort_by, by
// the sort_by field, or reversed (from lq's offset). A capability is asked
// of the Finder first, also when the directory holds Things that offer
// it: the federation asks the network unless it did for the capability
// lately (federation.LookupFresh) and stores what it finds, so that the
// Things that reached this node first do not hide the other providers
// (docs/security.md, eclipse). The Things served count as used
// (directory.Use: the budget keeps them longer).
func (h *Handler) listPage(r *http.Request, lq listQuery) (lr listResult, p *lmosproto.Problem) {
	lr.byID = lq.byID()
	q := lq.q
	q.Offset, q.Limit = lq.offset, lq.limit
	switch {
	case lr.byID:
		q.ByID, q.After = true, lq.cursor
	case lq.sortBy != 0 || lq.desc:
		// Reversed without sort_by: the default order reversed.
		q.Sort, q.Desc = lq.sortBy, lq.desc
		if q.Sort == 0 && q.Text != "" {
			q.Sort = directory.SortRelevance
		} else if q.Sort == 0 {
			q.Sort = directory.SortID
		}
	}
	lr.q = q
	if lq.q.Capability != "" && h.deps.Finder != nil {
		h.lookupRemote(r.Context(), lq)
	}
	res, err := h.deps.Directory.Search(q)
	if err != nil {
		return lr, httpapi.Problemf(http.StatusBadRequest, "%v", err)
	}
	lr.page, lr.total, lr.more = res.Entries, res.Total, res.Next != ""
	h.deps.Directory.Use(lr.page...)
	return lr, nil
}

// listedPage is what a listing page serves.
type listedPage struct {
	// members are the TDs (or consumer views, or Enriched TDs) as served.
	members [][]byte
	// online are their publishers' online flags (HeaderOnline).
	online []string
	// orgs are the states of their organisation claims
	// (HeaderOrganization).
	orgs []string
	// marks are their publishers' trust marks (HeaderTrust).
	marks []string
	// consumed counts the page's entries served or skipped: the next page
	// starts after them, also when the page ends early at MaxPageBytes.
	consumed int
}

// listMembers is the listing's members for the entries of page, in lq's
// form, at most MaxPageBytes of them (but at least one); entries removed
// since the search are skipped. On failure it answers r itself and
// returns false.
func (h *Handler) listMembers(w http.ResponseWriter, r *http.Request, lq listQuery, consumer bool, page []directory.Entry) (lp listedPage, ok bool) {
	now := time.Now()
	lp.consumed = len(page)
	size := 0
	for i, e := range page {
		// The record as stored, not parsed: a page serves it as it is,
		// and parsing twenty TDs took most of a page's time.
		raw, tombstone, err := e.Stored()
		if err != nil || tombstone {
			continue // removed since the search
		}
		doc, ok := h.listItem(r, consumer, e, raw)
		if !ok {
			continue
		}
		if lq.enriched {
			if doc, err = enrich(raw, registrationOf(e), now); err != nil {
				h.writeInternal(w, r, "enrich", e.ThingID, err)
				return lp, false
			}
		}
		if len(lp.members) > 0 && size+len(doc) > h.cfg.MaxPageBytes {
			lp.consumed = i
			break
		}
		size += len(doc)
		lp.members = append(lp.members, doc)
		lp.online = append(lp.online, strconv.FormatBool(e.Online))
		if h.deps.Orgs != nil { // the claim read only when it is shown
			lp.orgs = append(lp.orgs, h.organization(e.Publisher, lmosproto.OrganizationOf(raw)).Status())
		}
		if h.deps.Trust != nil {
			lp.marks = append(lp.marks, string(h.deps.Trust.Mark(e.Publisher)))
		}
	}
	return lp, true
}

// pageURL is the URL of a page of r's listing, at an offset (at "offset")
// or after a cursor (at "cursor"): every other argument (filters, format,
// sorting) kept, so the page continues the same ordered set.
func (h *Handler) pageURL(r *http.Request, at, value string, limit int) string {
	v := r.URL.Query()
	v.Del("offset")
	v.Del("cursor")
	v.Set(at, value)
	v.Set("limit", strconv.Itoa(limit))
	return h.base(r) + "/things?" + v.Encode()
}

// writeCollection writes the ThingCollection body (WoT Discovery §7.3.2.1.5,
// format=collection) with members, the TDs exactly as given.
func writeCollection(buf *bytes.Buffer, self, next string, total int, members [][]byte) {
	str := func(s string) string { b, _ := encodeJSON(s); return string(b) }
	fmt.Fprintf(buf, `{"@context":%s,"@type":"ThingCollection","@id":%s,"total":%d`, str(DiscoveryContext), str(self), total)
	if next != "" {
		buf.WriteString(`,"next":` + str(next))
	}
	buf.WriteString(`,"members":[`)
	buf.Write(bytes.Join(members, []byte{','}))
	buf.WriteString("]}\n")
}

// retrieve serves GET and HEAD /things/{id}: the signed TD exactly as
// published, or with enriched=true the Enriched TD, which adds the
// registration information. Both carry it in headers too.
func (h *Handler) retrieve(w http.ResponseWriter, r *http.Request) {
	enriched := false
	if s, ok := single(r.URL.Query(), "enriched"); ok {
		b, err := strconv.ParseBool(s)
		if err != nil || len(r.URL.Query()["enriched"]) > 1 {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter enriched: %q: want true or false, once", s))
			return
		}
		enriched = b
	}
	id := r.PathValue("id")
	e, p := h.resolve(r, id)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	rec, err := e.Record()
	if err != nil || rec.Tombstone() {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("thing %q of %s was removed", id, e.Publisher)})
		return
	}
	doc := rec.Raw
	if enriched {
		if doc, err = enrich(rec.Raw, registrationOf(e), time.Now()); err != nil {
			h.writeInternal(w, r, "enrich", id, err)
			return
		}
	}
	setRegistrationHeaders(w.Header(), e)
	if h.deps.Trust != nil {
		w.Header().Set(HeaderTrust, string(h.deps.Trust.Mark(e.Publisher)))
	}
	if o := h.organization(e.Publisher, rec.TD.Organization()); h.deps.Orgs != nil {
		w.Header().Set(HeaderOrganization, o.Status())
		if o != nil && !o.Verified {
			w.Header().Set(HeaderOrganizationReason, o.Reason)
		}
	}
	if l := h.consumerViewLink(r, e); l != "" {
		w.Header().Add("Link", l)
	}
	writeBody(w, r, doc, ContentTypeTD, ContentTypeLDJSON, ContentTypeJSON)
}

// writeBody answers 200 with body, as the first of the media types offers
// that r's Accept prefers (server-driven negotiation between equivalent
// JSON media types: the bytes are the same); the first offer if Accept
// admits none, as a client asking for something else still gets JSON.
func writeBody(w http.ResponseWriter, r *http.Request, body []byte, offers ...string) {
	ct, ok := httpapi.Negotiate(r, offers...)
	if !ok {
		ct = offers[0]
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Add("Vary", "Accept")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// listRank is the rank of a listing's publishers: the trust list's
// preferred, then allowed publishers first; the node's own and unknown
// ones keep the listing's order (so that without a trust list nothing
// moves).
func (h *Handler) listRank(p peer.ID) int {
	switch r := h.deps.Trust.Rank(p); r {
	case trust.RankPreferred, trust.RankAllowed:
		return r
	}
	return 0
}

// organization is the organisation claim of a TD of publisher p
// (lmos:organization), checked; nil without a claim or without
// Deps.Orgs.
func (h *Handler) organization(p peer.ID, claim string) *did.Organization {
	if h.deps.Orgs == nil {
		return nil
	}
	return h.deps.Orgs.Of(p, claim)
}
