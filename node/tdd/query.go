package tdd

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// listQuery is a checked listing request.
type listQuery struct {
	q             directory.Query
	offset, limit int
	// cursor continues a listing in id order (Result.Next, the next
	// link); "" from offset.
	cursor string
	// collection selects the ThingCollection body (format=collection).
	collection bool
	// enriched selects Enriched TDs (enriched=true).
	enriched bool
	// sortBy is the sort field (0 for the default order), desc the
	// direction.
	sortBy directory.SortKey
	desc   bool
}

// sortFields maps every accepted sort_by value to its field: the spec's
// sort_by names a field by JSON pointer ("/title") or plainly ("title");
// each has a string or date-time value that orders by Unicode code points
// (dates in RFC 3339 UTC, which order as time does).
var sortFields = map[string]directory.SortKey{
	"id": directory.SortID, "/id": directory.SortID,
	"title": directory.SortTitle, "/title": directory.SortTitle,
	"created": directory.SortCreated, "/registration/created": directory.SortCreated,
	"modified": directory.SortModified, "/registration/modified": directory.SortModified,
}

// parseListQuery checks the query parameters of GET /things.
func (h *Handler) parseListQuery(r *http.Request) (listQuery, *lmosproto.Problem) {
	v := r.URL.Query()
	for _, p := range []string{"offset", "cursor", "limit", "format", "sort_by", "sort_order", "enriched", "type", "capability", "vendor", "publisher", "group", "q", "online"} {
		if len(v[p]) > 1 {
			return listQuery{}, httpapi.Problemf(http.StatusBadRequest, "query parameter %s: given %d times, want at most once", p, len(v[p]))
		}
	}
	lq, p := h.parsePaging(v)
	if p != nil {
		return lq, p
	}
	if lq.q, p = h.parseFilters(v); p != nil {
		return lq, p
	}
	if lq.cursor != "" && !lq.byID() {
		return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter cursor: a cursor pages the listing in ascending id order (no sort_by other than id, no sort_order=desc, no q); page this one with offset")
	}
	return lq, nil
}

// parsePaging checks the parameters that page, order and shape a
// listing: offset, limit, format, sort_by, sort_order and enriched.
func (h *Handler) parsePaging(v url.Values) (listQuery, *lmosproto.Problem) {
	lq := listQuery{limit: h.cfg.DefaultLimit}
	if s, ok := single(v, "offset"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter offset: %q is not a non-negative integer", s)
		}
		lq.offset = n
	}
	if s, ok := single(v, "cursor"); ok {
		if s == "" {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter cursor: empty; omit it for the first page")
		}
		lq.cursor = s
	}
	if s, ok := single(v, "limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter limit: %q is not a positive integer", s)
		}
		lq.limit = min(n, h.cfg.MaxLimit)
	}
	format, p := choice(v, "format", "array", "collection")
	if p != nil {
		return lq, p
	}
	lq.collection = format == "collection"
	if s, ok := single(v, "sort_by"); ok {
		f, known := sortFields[s]
		if !known {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter sort_by: %q is not an orderable field: want id, title, created or modified (or the JSON pointers /id, /title, /registration/created, /registration/modified)", s)
		}
		lq.sortBy = f
	}
	sortOrder, p := choice(v, "sort_order", "asc", "desc")
	if p != nil {
		return lq, p
	}
	lq.desc = sortOrder == "desc"
	lq.enriched, p = boolParam(v, "enriched")
	return lq, p
}

// byID reports whether the listing is in ascending id order, which the
// directory pages with a cursor or an offset; the others by offset.
func (lq listQuery) byID() bool {
	return (lq.sortBy == directory.SortID || (lq.sortBy == 0 && lq.q.Text == "")) && !lq.desc
}

// parseFilters checks the parameters that select Things: online, type,
// capability (with a version range), vendor, publisher, group and q.
func (h *Handler) parseFilters(v url.Values) (q directory.Query, p *lmosproto.Problem) {
	if q.Online, p = boolParam(v, "online"); p != nil {
		return q, p
	}
	q.Type = v.Get("type")
	q.Capability = v.Get("capability")
	q.Vendor = v.Get("vendor")
	q.Group = v.Get("group")
	q.Text = v.Get("q")
	if s := v.Get("publisher"); s != "" {
		id, err := h.deps.Directory.ParsePublisher(s)
		if errors.Is(err, directory.ErrUnknownPublisher) {
			return q, httpapi.Problemf(http.StatusNotFound, "query parameter publisher: %v", err)
		}
		if err != nil {
			return q, httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err)
		}
		q.Publisher = id
	}
	if c := q.Capability; c != "" {
		id, rng, hasRange := splitCapability(c)
		if id == "" {
			return q, httpapi.Problemf(http.StatusBadRequest, "query parameter capability: %q has no capability id before '@'", c)
		}
		if hasRange {
			if _, err := semver.NewConstraint(rng); err != nil {
				return q, httpapi.Problemf(http.StatusBadRequest, "query parameter capability: %q: version range %q: %v", c, rng, err)
			}
		}
	}
	return q, nil
}

// boolParam returns the value of the boolean query parameter name, false
// when absent.
func boolParam(v url.Values, name string) (bool, *lmosproto.Problem) {
	s, ok := single(v, name)
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, httpapi.Problemf(http.StatusBadRequest, "query parameter %s: %q: want true or false", name, s)
	}
	return b, nil
}

// choice returns the value of query parameter name, one of allowed; absent
// or empty, the first (the default).
func choice(v url.Values, name string, allowed ...string) (string, *lmosproto.Problem) {
	s := v.Get(name)
	switch {
	case s == "":
		return allowed[0], nil
	case slices.Contains(allowed, s):
		return s, nil
	}
	return "", httpapi.Problemf(http.StatusBadRequest, "query parameter %s: %q: want one of %s", name, s, strings.Join(allowed, ", "))
}

// single returns the value of a query parameter and whether it is present.
func single(v url.Values, name string) (string, bool) {
	if !v.Has(name) {
		return "", false
	}
	return v.Get(name), true
}

// lookupRemote asks the Finder for the capability of q; the Things it
// finds land in the directory. A failed or timed-out lookup is logged:
// the directory's answer stands.
func (h *Handler) lookupRemote(ctx context.Context, lq listQuery) {
	capID, _, _ := splitCapability(lq.q.Capability)
	ctx, cancel := context.WithTimeout(ctx, h.cfg.FindTimeout)
	defer cancel()
	if err := h.deps.Finder.LookupCapability(ctx, capID); err != nil {
		lvl := h.log.Warn
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			lvl = h.log.Debug
		}
		lvl("capability lookup failed", "capability", capID, "err", err)
	}
}

// splitCapability splits "id@range" at its last '@', as the directory does.
func splitCapability(s string) (id, rng string, hasRange bool) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
