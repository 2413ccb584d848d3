package tdd

import (
	"context"
	"errors"
	"fmt"
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
}

// parseListQuery checks the query parameters of GET /things.
func (h *Handler) parseListQuery(r *http.Request) (listQuery, *lmosproto.Problem) {
	v := r.URL.Query()
	lq := listQuery{limit: h.cfg.DefaultLimit}
	if s, ok := single(v, "offset"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter offset: %q is not a non-negative integer", s)
		}
		lq.offset = n
	}
	if s, ok := single(v, "limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter limit: %q is not a positive integer", s)
		}
		lq.limit = min(n, h.cfg.MaxLimit)
	}
	if s, ok := single(v, "format"); ok && s != "array" {
		if s == "collection" {
			return lq, &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: `query parameter format: "collection" is not supported; use "array" (the default)`}
		}
		return lq, httpapi.Problemf(http.StatusBadRequest, `query parameter format: %q: want "array"`, s)
	}
	for _, p := range []string{"sort_by", "sort_order"} {
		if v.Has(p) {
			return lq, &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: fmt.Sprintf("query parameter %s: sorting is not supported; results are ordered by relevance (with q), then title, publisher and id", p)}
		}
	}
	for _, p := range []string{"offset", "limit", "format", "type", "capability", "vendor", "publisher", "group", "q"} {
		if len(v[p]) > 1 {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter %s: given %d times, want at most once", p, len(v[p]))
		}
	}
	lq.q.Type = v.Get("type")
	lq.q.Capability = v.Get("capability")
	lq.q.Vendor = v.Get("vendor")
	lq.q.Group = v.Get("group")
	lq.q.Text = v.Get("q")
	if s := v.Get("publisher"); s != "" {
		id, err := lmosproto.ParsePublisher(s)
		if err != nil {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err)
		}
		lq.q.Publisher = id
	}
	if c := lq.q.Capability; c != "" {
		id, rng, hasRange := splitCapability(c)
		if id == "" {
			return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter capability: %q has no capability id before '@'", c)
		}
		if hasRange {
			if _, err := semver.NewConstraint(rng); err != nil {
				return lq, httpapi.Problemf(http.StatusBadRequest, "query parameter capability: %q: version range %q: %v", c, rng, err)
			}
		}
	}
	lq.q.Offset, lq.q.Limit = lq.offset, lq.limit
	return lq, nil
}

// single returns the value of a query parameter and whether it is present.
func single(v url.Values, name string) (string, bool) {
	if !v.Has(name) {
		return "", false
	}
	return v.Get(name), true
}

// findRemote asks the Finder for the capability of q after a local miss
// and returns the page of its answer that matches q, and the total. A
// failed or timed-out lookup is logged and counts as no match: the local
// answer (nothing) stands.
func (h *Handler) findRemote(ctx context.Context, lq listQuery) ([]directory.Entry, int) {
	capID, _, _ := splitCapability(lq.q.Capability)
	ctx, cancel := context.WithTimeout(ctx, h.cfg.FindTimeout)
	defer cancel()
	found, err := h.deps.Finder.FindCapability(ctx, capID)
	if err != nil {
		lvl := h.log.Warn
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			lvl = h.log.Debug
		}
		lvl("capability lookup failed", "capability", capID, "err", err)
		if len(found) == 0 {
			return nil, 0
		}
	}
	m, err := newMatcher(lq.q)
	if err != nil { // checked by parseListQuery
		return nil, 0
	}
	var hits []directory.Entry
	seen := make(map[[2]string]bool, len(found))
	for _, e := range found {
		key := [2]string{string(e.Publisher), e.ThingID}
		if e.Tombstone || seen[key] || !m.match(e) {
			continue
		}
		seen[key] = true
		hits = append(hits, e)
	}
	total := len(hits)
	if lq.offset >= total {
		return nil, total
	}
	hits = hits[lq.offset:]
	return hits[:min(len(hits), lq.limit)], total
}

// matcher applies a directory.Query to entries that did not come from a
// directory search (the Finder's answer). Free text matches when every word
// occurs in the title, description or a capability id (no ranking).
type matcher struct {
	q          directory.Query
	capID      string
	constraint *semver.Constraints
	words      []string
}

func newMatcher(q directory.Query) (*matcher, error) {
	m := &matcher{q: q}
	capID, rng, hasRange := splitCapability(q.Capability)
	m.capID = capID
	if hasRange {
		c, err := semver.NewConstraint(rng)
		if err != nil {
			return nil, err
		}
		m.constraint = c
	}
	m.words = strings.Fields(strings.ToLower(q.Text))
	return m, nil
}

func (m *matcher) match(e directory.Entry) bool {
	q := m.q
	if q.Type != "" {
		want := q.Type
		switch strings.ToLower(want) {
		case "agent":
			want = lmosproto.TypeAgent
		case "tool":
			want = lmosproto.TypeTool
		}
		if !slices.Contains(e.Types, want) {
			return false
		}
	}
	if m.capID != "" && !m.hasCapability(e) {
		return false
	}
	if q.Vendor != "" && !strings.EqualFold(strings.TrimSpace(q.Vendor), strings.TrimSpace(e.Vendor)) {
		return false
	}
	if q.Publisher != "" && q.Publisher != e.Publisher {
		return false
	}
	if q.Group != "" && !slices.Contains(e.Groups, q.Group) {
		return false
	}
	if len(m.words) > 0 && !m.matchText(e) {
		return false
	}
	return q.Visible == nil || q.Visible(e)
}

func (m *matcher) hasCapability(e directory.Entry) bool {
	for _, c := range e.Capabilities {
		if c.ID != m.capID {
			continue
		}
		if m.constraint == nil {
			return true
		}
		if v, err := semver.NewVersion(c.Version); err == nil && m.constraint.Check(v) {
			return true
		}
	}
	return false
}

func (m *matcher) matchText(e directory.Entry) bool {
	var b strings.Builder
	b.WriteString(e.Title)
	if td, err := e.TD(); err == nil {
		b.WriteString(" " + td.Description)
	}
	for _, c := range e.Capabilities {
		b.WriteString(" " + c.ID)
	}
	text := strings.ToLower(b.String())
	for _, w := range m.words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// splitCapability splits "id@range" at its last '@', as the directory does.
func splitCapability(s string) (id, rng string, hasRange bool) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}
