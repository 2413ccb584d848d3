package directory

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Query selects Things. Its filters combine with AND; a zero field does not
// filter. Tombstones and expired Things never match.
type Query struct {
	// Type is an @type: "agent" and "tool" (any case) stand for lmos:Agent
	// and lmos:Tool, anything else must equal one of the Thing's types.
	Type string
	// Capability is a capability id, optionally followed by "@" and a
	// semantic version constraint on its lmos:version
	// ("weather-forecast@^1.2").
	Capability string
	// Version is a semantic version constraint (Masterminds/semver syntax:
	// "^1.2", ">= 1.0, < 2", "1.x") on the version of Capability, as an
	// alternative to the "@" form. A capability published without a valid
	// version does not match any constraint.
	Version string
	// Vendor is the lmos:vendor name, compared case-insensitively.
	Vendor string
	// Publisher is the peer that published the Thing.
	Publisher peer.ID
	// Group selects the Things that name this group in lmos:groups.
	Group string
	// Text is free text matched against the title, description and
	// capabilities (ids, descriptions, examples); results are ranked by
	// relevance (BM25, a title word weighs most). Text without a searchable
	// word (only stopwords or punctuation) matches nothing.
	Text string
	// Visible, if set, hides the Things it returns false for (the group
	// layer: Things naming lmos:groups are visible to members only). It is
	// called under the directory's read lock and must not call the
	// Directory.
	Visible func(Entry) bool

	// Offset skips that many results; Limit returns at most that many
	// (0: all).
	Offset int
	Limit  int
}

// Result is a page of search results.
type Result struct {
	// Entries are the page, ordered by Score (descending, free-text queries
	// only), then title, publisher and thing id.
	Entries []Entry
	// Total is the number of matching Things, all pages together.
	Total int
}

// filters is a Query checked and resolved.
type filters struct {
	typ, capability, vendor, group string
	publisher                      peer.ID
	constraint                     *semver.Constraints
	terms                          []string
	text                           bool
}

func (q *Query) resolve() (filters, error) {
	var f filters
	if q.Offset < 0 {
		return f, fmt.Errorf("query: offset: %d is negative", q.Offset)
	}
	if q.Limit < 0 {
		return f, fmt.Errorf("query: limit: %d is negative", q.Limit)
	}
	switch strings.ToLower(q.Type) {
	case "agent":
		f.typ = lmosproto.TypeAgent
	case "tool":
		f.typ = lmosproto.TypeTool
	default:
		f.typ = q.Type
	}
	f.capability = q.Capability
	constraint := q.Version
	if i := strings.LastIndexByte(q.Capability, '@'); i >= 0 {
		if q.Version != "" {
			return f, fmt.Errorf("query: capability %q: a version constraint both after @ and in version %q", q.Capability, q.Version)
		}
		f.capability, constraint = q.Capability[:i], q.Capability[i+1:]
	}
	if constraint = strings.TrimSpace(constraint); constraint != "" {
		if f.capability == "" {
			return f, fmt.Errorf("query: version %q: a version constraint needs a capability", constraint)
		}
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return f, fmt.Errorf("query: capability %q: version constraint %q: %w", f.capability, constraint, err)
		}
		f.constraint = c
	}
	if q.Vendor != "" {
		f.vendor = vendorKey(q.Vendor)
	}
	if q.Publisher != "" {
		if err := q.Publisher.Validate(); err != nil {
			return f, fmt.Errorf("query: publisher: %w", err)
		}
		f.publisher = q.Publisher
	}
	f.group = q.Group
	if q.Text != "" {
		f.text = true
		f.terms = queryTerms(q.Text)
	}
	return f, nil
}

// hit is a matching Thing and its relevance.
type hit struct {
	t     *thing
	score float64
}

// better orders hits: score descending, then title, publisher, id.
func better(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.t.title != b.t.title {
		return a.t.title < b.t.title
	}
	if a.t.publisher != b.t.publisher {
		return a.t.publisher < b.t.publisher
	}
	return a.t.id < b.t.id
}

func cmpHits(a, b hit) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// cursor walks a sorted posting list for membership tests of increasing
// slots.
type cursor struct {
	list postings
	pos  int
}

// has reports whether s is in the list; s must not decrease between calls.
func (c *cursor) has(s uint32) bool {
	rest := c.list[c.pos:]
	// Gallop: the next match is usually close.
	step := 1
	for step < len(rest) && rest[step-1] < s {
		step *= 2
	}
	i, found := slices.BinarySearch(rest[:min(step, len(rest))], s)
	c.pos += i
	return found
}

// Search returns the page of Things that q selects, and their total.
func (d *Directory) Search(q Query) (Result, error) {
	f, err := q.resolve()
	if err != nil {
		return Result{}, err
	}
	if f.text && len(f.terms) == 0 {
		return Result{}, nil
	}
	now := d.opts.Now().UnixNano()
	keep := q.Offset + q.Limit
	if q.Limit == 0 || keep < 0 {
		keep = math.MaxInt
	}

	d.mu.RLock()
	defer d.mu.RUnlock()
	x := &d.idx

	// The posting lists of the filters; any empty one means no match.
	var lists []postings
	for _, l := range []struct {
		on   bool
		list postings
	}{
		{f.typ != "", x.types[f.typ]},
		{f.capability != "", x.caps[f.capability]},
		{f.vendor != "", x.vendors[f.vendor]},
		{f.group != "", x.groups[f.group]},
		{f.publisher != "", x.publishers[f.publisher]},
	} {
		if !l.on {
			continue
		}
		if len(l.list) == 0 {
			return Result{}, nil
		}
		lists = append(lists, l.list)
	}

	top := topK{keep: keep}
	match := func(s uint32) (*thing, bool) {
		t := x.slots[s]
		if t == nil || t.expired(now) {
			return nil, false
		}
		if f.constraint != nil && !t.hasVersion(f.capability, f.constraint) {
			return nil, false
		}
		if q.Visible != nil && !q.Visible(d.entry(t, 0)) {
			return nil, false
		}
		return t, true
	}

	if f.text {
		cursors := make([]cursor, len(lists))
		for i, l := range lists {
			cursors[i] = cursor{list: l}
		}
		d.scoreText(f.terms, func(s uint32, score float64) {
			for i := range cursors {
				if !cursors[i].has(s) {
					return
				}
			}
			if t, ok := match(s); ok {
				top.add(hit{t: t, score: score})
			}
		})
	} else {
		// Drive by the shortest list, test membership in the others.
		slices.SortFunc(lists, func(a, b postings) int { return len(a) - len(b) })
		if len(lists) == 0 {
			for s := range x.slots {
				if t, ok := match(uint32(s)); ok {
					top.add(hit{t: t})
				}
			}
		} else {
			cursors := make([]cursor, len(lists)-1)
			for i, l := range lists[1:] {
				cursors[i] = cursor{list: l}
			}
		next:
			for _, s := range lists[0] {
				for i := range cursors {
					if !cursors[i].has(s) {
						continue next
					}
				}
				if t, ok := match(s); ok {
					top.add(hit{t: t})
				}
			}
		}
	}

	hits := top.sorted()
	res := Result{Total: top.total}
	if q.Offset < len(hits) {
		hits = hits[q.Offset:]
		res.Entries = make([]Entry, len(hits))
		for i, h := range hits {
			res.Entries[i] = d.entry(h.t, h.score)
		}
	}
	return res, nil
}

// hasVersion reports whether t has capability id at a version in c.
func (t *thing) hasVersion(id string, c *semver.Constraints) bool {
	for i, cp := range t.caps {
		if cp.ID == id && t.versions[i] != nil && c.Check(t.versions[i]) {
			return true
		}
	}
	return false
}

// scoreText calls fn, in increasing slot order, with every document that
// has at least one of terms and its BM25 score. Callers hold mu.
func (d *Directory) scoreText(terms []string, fn func(slot uint32, score float64)) {
	x := &d.idx
	if x.live == 0 {
		return
	}
	avgdl := float64(x.totalDL) / float64(x.live)
	if avgdl == 0 {
		avgdl = 1
	}
	type termCursor struct {
		list []posting
		idf  float64
	}
	cs := make([]termCursor, 0, len(terms))
	for _, term := range terms {
		if id, ok := x.termIDs[term]; ok {
			list := x.terms[id].list
			cs = append(cs, termCursor{list: list, idf: bm25IDF(x.live, len(list))})
		}
	}
	// Merge the lists by slot; queries have few terms, so a linear scan of
	// the heads beats a heap.
	for {
		slot, any := uint32(math.MaxUint32), false
		for _, c := range cs {
			if len(c.list) > 0 && c.list[0].slot <= slot {
				slot, any = c.list[0].slot, true
			}
		}
		if !any {
			return
		}
		dl := x.slots[slot].dl
		var score float64
		for i := range cs {
			c := &cs[i]
			if len(c.list) > 0 && c.list[0].slot == slot {
				score += bm25Term(c.idf, c.list[0].tf, dl, avgdl)
				c.list = c.list[1:]
			}
		}
		fn(slot, score)
	}
}

// topK keeps the best keep hits seen, and counts them all.
type topK struct {
	keep  int // math.MaxInt: keep all
	total int
	// heap is a max-heap by rank: heap[0] is the worst hit kept.
	heap []hit
}

func (k *topK) add(h hit) {
	k.total++
	if k.keep == math.MaxInt {
		k.heap = append(k.heap, h) // sorted at the end
		return
	}
	if len(k.heap) < k.keep {
		k.heap = append(k.heap, h)
		// sift up
		i := len(k.heap) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !better(k.heap[p], k.heap[i]) {
				break
			}
			k.heap[p], k.heap[i] = k.heap[i], k.heap[p]
			i = p
		}
		return
	}
	if k.keep == 0 || !better(h, k.heap[0]) {
		return
	}
	k.heap[0] = h
	// sift down
	i, n := 0, len(k.heap)
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < n && better(k.heap[worst], k.heap[l]) {
			worst = l
		}
		if r < n && better(k.heap[worst], k.heap[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		k.heap[i], k.heap[worst] = k.heap[worst], k.heap[i]
		i = worst
	}
}

// sorted returns the kept hits, best first.
func (k *topK) sorted() []hit {
	slices.SortFunc(k.heap, cmpHits)
	return k.heap
}
