package directory

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// Online selects the Things that are online (Entry.Online).
	Online bool
	// Visible, if set, hides the Things restricted to groups that it
	// returns false for (the group layer: Things naming lmos:groups are
	// visible to members only); a public Thing is visible to everyone, and
	// Visible is not asked of it. It is called under the directory's read
	// lock and must not call the Directory. It is called for every such
	// candidate with an entry of what the directory holds in memory:
	// identity, version, Own, Local, Title, Groups, registration and
	// liveness, but not Types, Vendor or Capabilities (read from the
	// datastore for results only).
	Visible func(Entry) bool

	// Rank, if set, ranks publishers (higher first): results are ordered
	// by their publisher's rank before anything else (the trust list's
	// preferred and allowed publishers lead). It is called under the
	// directory's read lock, once per publisher of the candidates, and
	// must not call the Directory.
	Rank func(peer.ID) int

	// ByID orders the results by thing id (byte order of the UTF-8
	// strings, which is Unicode code point order), then publisher, instead
	// of by relevance and title; free-text scores are still computed.
	ByID bool

	// Sort, if set, orders the results by that field instead, online
	// Things first (the order of a WoT Discovery listing with sort_by):
	// then by the field, thing id and publisher, ascending, or descending
	// with Desc. Rank is not applied; ByID and After must not be set. The
	// directory keeps the best Offset+Limit of the matches, not all.
	Sort SortKey
	Desc bool

	// After continues a listing after the entry a cursor was made from
	// (Result.Next, Query.CursorAfter): only the results ordered after it
	// are paged, so a page deep in a listing costs what the first one
	// does (an Offset costs the results it skips). The cursor must come
	// from a query in the same order (ByID or not); Offset then skips
	// results after the cursor. Empty: from the start.
	After string

	// Offset skips that many results; Limit returns at most that many
	// (0: all).
	Offset int
	Limit  int

	// first stops the search at its first match (Holds).
	first bool
}

// SortKey is a field that Query.Sort orders by.
type SortKey uint8

// The fields Query.Sort orders by.
const (
	// SortID orders by thing id (byte order).
	SortID SortKey = iota + 1
	// SortTitle orders by title (byte order).
	SortTitle
	// SortCreated and SortModified order by registration time.
	SortCreated
	SortModified
	// SortRelevance orders by free-text score, highest first (the
	// default order's first key; descending reverses it), then title.
	SortRelevance
)

// Result is a page of search results.
type Result struct {
	// Entries are the page, online Things first (Entry.Online), then by
	// Score (descending, free-text queries only), title, publisher and
	// thing id; with Query.ByID online first, then by thing id and
	// publisher; with Query.Sort in its order.
	Entries []Entry
	// Total is the number of matching Things, all pages together (those
	// before Query.After included).
	Total int
	// Next is the cursor of the next page (Query.After) when there are
	// results after this page and the query has a Limit and no Sort;
	// empty otherwise.
	Next string
}

// filters is a Query checked and resolved.
type filters struct {
	typ, capability, vendor, group string
	publisher                      peer.ID
	constraint                     *versionRange
	terms                          []string
	text                           bool
	// after is the hit Query.After continues after; nil without.
	after *hit
}

func (d *Directory) resolve(q *Query) (filters, error) {
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
		c, err := d.constraints.get(constraint)
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
	if q.Sort != 0 && (q.ByID || q.After != "") {
		return f, errors.New("query: sort: not with ByID or After")
	}
	if q.Sort > SortRelevance {
		return f, fmt.Errorf("query: sort: unknown field %d", q.Sort)
	}
	if q.After != "" {
		h, err := decodeCursor(q.After, q.ByID)
		if err != nil {
			return f, fmt.Errorf("query: after: %w", err)
		}
		f.after = &h
	}
	if q.Text != "" {
		f.text = true
		f.terms = queryTerms(q.Text)
	}
	return f, nil
}

// Bounds of the caches of version ranges.
const (
	maxConstraintCache = 128
	maxRangeMemo       = 1024
)

// versionRange is a parsed version constraint with the results of its
// checks: semver's Check formats an error for every version it rejects,
// which costs more than the rest of a capability query. The versions held
// by Things are shared (Directory.version), so the memo stays small.
type versionRange struct {
	cs   *semver.Constraints
	memo sync.Map // *semver.Version → bool
	n    atomic.Int32
}

func (r *versionRange) check(v *semver.Version) bool {
	if ok, found := r.memo.Load(v); found {
		return ok.(bool)
	}
	ok := r.cs.Check(v)
	if r.n.Add(1) <= maxRangeMemo {
		r.memo.Store(v, ok)
	}
	return ok
}

// constraintCache keeps the version ranges of recent queries.
type constraintCache struct {
	mu sync.Mutex
	m  map[string]*versionRange
}

func (c *constraintCache) get(s string) (*versionRange, error) {
	c.mu.Lock()
	r, ok := c.m[s]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	cs, err := semver.NewConstraint(s)
	if err != nil {
		return nil, err
	}
	r = &versionRange{cs: cs}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxConstraintCache {
		c.m = make(map[string]*versionRange)
	}
	c.m[s] = r
	return r, nil
}

// hit is a matching Thing and its relevance.
type hit struct {
	t      *thing
	rank   int // Query.Rank of the publisher
	online bool
	score  float64
	key    uint64 // titleKey of the title, or of t.id when ordering by id
}

// better orders hits: rank descending, online first, score descending,
// then title, publisher, id.
func better(a, b hit) bool {
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if a.online != b.online {
		return a.online
	}
	if a.score != b.score {
		return a.score > b.score
	}
	if a.key != b.key {
		return a.key < b.key
	}
	if a.t.title != b.t.title {
		return a.t.title < b.t.title
	}
	if a.t.publisher != b.t.publisher {
		return a.t.publisherID() < b.t.publisherID()
	}
	return a.t.id < b.t.id
}

// betterByID orders hits by rank (descending), online first, then by id
// and publisher (Query.ByID).
func betterByID(a, b hit) bool {
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if a.online != b.online {
		return a.online
	}
	if a.key != b.key {
		return a.key < b.key
	}
	if a.t.id != b.t.id {
		return a.t.id < b.t.id
	}
	return a.t.publisherID() < b.t.publisherID()
}

// sortedBy is the order of Query.Sort: online first, then by field
// (SortRelevance: score descending, then title), thing id and publisher,
// ascending or, with desc, descending.
func sortedBy(field SortKey, desc bool) func(a, b hit) bool {
	var by func(a, b hit) int
	switch field {
	case SortTitle:
		by = func(a, b hit) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.t.title, b.t.title)) }
	case SortCreated:
		by = func(a, b hit) int { return cmp.Compare(a.t.created, b.t.created) }
	case SortModified:
		by = func(a, b hit) int { return cmp.Compare(a.t.modified, b.t.modified) }
	case SortRelevance:
		by = func(a, b hit) int {
			return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.key, b.key), cmp.Compare(a.t.title, b.t.title))
		}
	default: // SortID: the id's key, then the id below
		by = func(a, b hit) int { return cmp.Compare(a.key, b.key) }
	}
	return func(a, b hit) bool {
		if a.online != b.online {
			return a.online
		}
		c := cmp.Or(by(a, b), cmp.Compare(a.t.id, b.t.id), cmp.Compare(a.t.publisherID(), b.t.publisherID()))
		if desc {
			return c > 0
		}
		return c < 0
	}
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

// Holds reports whether q selects a Thing. Without free text it stops at
// the first match, where Search counts them all.
func (d *Directory) Holds(q Query) (bool, error) {
	q.first, q.Offset, q.Limit = true, 0, 1
	res, err := d.Search(q)
	return res.Total > 0, err
}

// Search returns the page of Things that q selects, and their total.
func (d *Directory) Search(q Query) (Result, error) {
	f, err := d.resolve(&q)
	if err != nil {
		return Result{}, err
	}
	if f.text && len(f.terms) == 0 {
		return Result{}, nil
	}
	now := d.now().UnixNano()
	keep := q.Offset + q.Limit
	if q.Limit == 0 || keep < 0 {
		keep = math.MaxInt
	}

	d.mu.RLock()
	defer d.mu.RUnlock()
	x := &d.idx
	var buf [maxFilterLists]cursor
	pf, ok := x.postingFilter(&f, buf[:0])
	pf.d = d
	if !ok {
		return Result{}, nil
	}
	top := topK{keep: keep, better: better}
	switch {
	case q.Sort != 0:
		top.better = sortedBy(q.Sort, q.Desc)
	case q.ByID:
		top.better = betterByID
	}
	byID := q.ByID || q.Sort == SortID
	before := 0 // matches ordered before f.after
	// ranks caches q.Rank by publisher place.
	var ranks map[uint32]int
	if q.Rank != nil {
		ranks = make(map[uint32]int)
	}
	nowSec := now / int64(time.Second) // for pastSec: slotMeta.expires is in seconds
	// consider adds slot s if it is in the lists of pf.cursors[from:] and
	// passes the checks that postings cannot do. It reads the slot's
	// metadata and visits the thing only where a check needs it (a
	// version constraint, a Thing restricted to groups, ordering by id),
	// since at a million Things the visits are most of a query's time. m
	// and t are the slot's metadata and thing if the caller read them
	// (nil: consider reads them).
	consider := func(s uint32, m *slotMeta, t *thing, score float64, from int) {
		for i := from; i < len(pf.cursors); i++ {
			if !pf.cursors[i].has(s) {
				return
			}
		}
		if m == nil {
			m = &x.meta[s]
		}
		if pastSec(m.expires, nowSec) {
			return
		}
		if t == nil {
			t = x.slots[s]
		}
		if t == nil || (pf.capCursor >= 0 && !pf.versionMatches(t)) {
			return
		}
		online := d.slotOnline(m, now)
		if q.Online && !online {
			return
		}
		if q.Visible != nil && m.scoped() && !q.Visible(d.entryWith(t, 0, nil)) {
			return
		}
		key := m.titleKey()
		if byID {
			key = titleKey(t.id)
		}
		h := hit{t: t, online: online, score: score, key: key}
		if q.Rank != nil && q.Sort == 0 {
			pub := m.publisher()
			r, ok := ranks[pub]
			if !ok {
				r = q.Rank(t.publisherID())
				ranks[pub] = r
			}
			h.rank = r
		}
		if f.after != nil && !top.better(*f.after, h) {
			before++
			return
		}
		top.add(h)
	}

	switch {
	case f.text:
		d.scoreText(f.terms, func(s uint32, score float64) { consider(s, nil, nil, score, 0) })
	case len(pf.cursors) > 0:
		// The shortest list drives a query without text; the others
		// filter its candidates.
		driver := &pf.cursors[0]
		if !pf.batched(x.live) {
			for i, s := range driver.list {
				driver.pos = i
				if consider(s, nil, nil, 0, 1); q.first && top.total > 0 {
					break
				}
			}
			break
		}
		// The candidates' metadata and things are read a batch at a
		// time, in a loop of loads alone, so that their cache misses
		// overlap (a popular capability's candidates are spread over
		// both arrays, tens of MB at a million Things).
		var metas [metaBatch]slotMeta
		var things [metaBatch]*thing
		for i := 0; i < len(driver.list); i += metaBatch {
			batch := driver.list[i:min(i+metaBatch, len(driver.list))]
			for j, s := range batch {
				metas[j], things[j] = x.meta[s], x.slots[s]
			}
			for j, s := range batch {
				driver.pos = i + j
				consider(s, &metas[j], things[j], 0, 1)
			}
			if q.first && top.total > 0 {
				break
			}
		}
	default:
		for s := range x.slots {
			if consider(uint32(s), nil, nil, 0, 0); q.first && top.total > 0 {
				break
			}
		}
	}
	res := d.page(&top, q.Offset)
	res.Total += before
	if q.Sort == 0 && q.Limit > 0 && len(res.Entries) == q.Limit && top.total > q.Offset+q.Limit {
		last := top.heap[len(top.heap)-1]
		res.Next = encodeCursor(last, q.ByID)
	}
	return res, nil
}

// page is the result of a search whose hits are top: the hits from
// offset on, and the total.
func (d *Directory) page(top *topK, offset int) Result {
	hits := top.sorted()
	res := Result{Total: top.total}
	if offset < len(hits) {
		hits = hits[offset:]
		res.Entries = make([]Entry, len(hits))
		for i, h := range hits {
			res.Entries[i] = d.entry(h.t, h.score)
		}
	}
	return res
}

// metaBatch is how many candidates' metadata and things a query reads at
// once (postingFilter.batched).
const metaBatch = 32

// maxFilterLists is the most posting lists a query's filters select: type,
// capability, vendor, group and publisher.
const maxFilterLists = 5

// postingFilter tests candidate slots, in increasing order, against the
// posting lists of a query's filters, and the capability's version
// against its constraint.
type postingFilter struct {
	// cursors walk the lists, shortest first.
	cursors []cursor
	// capCursor is the index in cursors of the capability's list when a
	// version constraint applies, else -1; caps is that list.
	capCursor int
	caps      *capList
	// f is the query's (a pointer, so that the constraint, which the
	// checks keep, does not take the cursors to the heap).
	f *filters
	// d reads the details of a Thing that lists the capability twice.
	d *Directory
}

// postingFilter opens a cursor, appended to buf, per posting list of f's
// filters; false if one of them is empty, so nothing matches. Callers hold
// mu.
func (x *index) postingFilter(f *filters, buf []cursor) (postingFilter, bool) {
	pf := postingFilter{cursors: buf, capCursor: -1, f: f}
	for _, l := range []struct {
		on   bool
		list postings
	}{
		{f.typ != "", x.types[f.typ]},
		{f.capability != "", x.capSlots(f.capability)},
		{f.vendor != "", x.vendors[f.vendor]},
		{f.group != "", x.groups[f.group]},
		{f.publisher != "", x.publishers[f.publisher]},
	} {
		if !l.on {
			continue
		}
		if len(l.list) == 0 {
			return pf, false
		}
		pf.cursors = append(pf.cursors, cursor{list: l.list})
	}
	slices.SortFunc(pf.cursors, func(a, b cursor) int { return len(a.list) - len(b.list) })
	if f.constraint != nil {
		l := x.caps[f.capability]
		pf.caps = l
		for i := range pf.cursors {
			if &pf.cursors[i].list[0] == &l.slots[0] {
				pf.capCursor = i
			}
		}
	}
	return pf, true
}

// batched reports whether a query reads its candidates in batches
// (metaBatch): when the lists other than the one that drives are
// expected to pass at least a quarter of its candidates (each list's
// share of the live Things, multiplied). A batch reads the metadata of
// every candidate, also those the filters then drop: at a million
// Things, batches took 25–30 % less time with a capability and a type (0.6
// of the Things), and 45 % more with a capability and a vendor (1/500).
func (pf *postingFilter) batched(live int) bool {
	pass := 1.0
	for _, c := range pf.cursors[1:] {
		pass *= float64(len(c.list)) / float64(max(live, 1))
	}
	return pass >= 0.25
}

// versionMatches reports whether t, the Thing of the slot the cursors
// last found, has the capability at a version the constraint admits; only
// with a constraint (capCursor >= 0).
func (pf *postingFilter) versionMatches(t *thing) bool {
	switch v := pf.caps.version(pf.cursors[pf.capCursor].pos); v {
	case nil:
		return false
	case multiVersion:
		return pf.d.details(t).hasVersion(pf.f.capability, pf.f.constraint)
	default:
		return pf.f.constraint.check(v)
	}
}

// hasVersion reports whether det has capability id at a version in c.
func (det *details) hasVersion(id string, r *versionRange) bool {
	for i, cp := range det.caps {
		if cp.ID == id && det.versions[i] != nil && r.check(det.versions[i]) {
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
		textCursor
		idf float64
	}
	cs := make([]termCursor, 0, len(terms))
	for _, term := range terms {
		if id, ok := x.termIDs[term]; ok {
			tm := &x.terms[id]
			cs = append(cs, termCursor{tm.posts.cursor(), bm25IDF(x.live, tm.posts.n)})
		}
	}
	// Merge the lists by slot; queries have few terms, so a linear scan of
	// the heads beats a heap.
	for {
		slot, found := uint32(math.MaxUint32), false
		for i := range cs {
			if c := &cs[i]; c.ok && c.cur.slot <= slot {
				slot, found = c.cur.slot, true
			}
		}
		if !found {
			return
		}
		dl := x.meta[slot].dl
		var score float64
		for i := range cs {
			if c := &cs[i]; c.ok && c.cur.slot == slot {
				score += bm25Term(c.idf, uint32(c.cur.tf), dl, avgdl)
				c.next()
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
	// better is the order: better(a, b) if a ranks before b.
	better func(a, b hit) bool
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
			if !k.better(k.heap[p], k.heap[i]) {
				break
			}
			k.heap[p], k.heap[i] = k.heap[i], k.heap[p]
			i = p
		}
		return
	}
	if k.keep == 0 || !k.better(h, k.heap[0]) {
		return
	}
	k.heap[0] = h
	// sift down
	i, n := 0, len(k.heap)
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < n && k.better(k.heap[worst], k.heap[l]) {
			worst = l
		}
		if r < n && k.better(k.heap[worst], k.heap[r]) {
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
	slices.SortFunc(k.heap, func(a, b hit) int {
		switch {
		case k.better(a, b):
			return -1
		case k.better(b, a):
			return 1
		}
		return 0
	})
	return k.heap
}
