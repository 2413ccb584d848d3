package directory

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// queryFixture is a small federation: the node itself (p0) and two peers.
type queryFixture struct {
	d          *Directory
	p0, p1, p2 publisher
}

func capv(id, version string) lmosproto.Capability {
	return lmosproto.Capability{ID: id, Version: version}
}

func newQueryFixture(t *testing.T) queryFixture {
	t.Helper()
	f := queryFixture{p0: newPublisher(t, 1), p1: newPublisher(t, 2), p2: newPublisher(t, 3)}
	f.d = open(t, memStore(), f.p0.id, newClock(), Config{})
	things := []struct {
		p    publisher
		spec thingSpec
	}{
		{f.p0, thingSpec{id: "urn:weather", title: "WeatherAgent", vendor: "Example Weather GmbH",
			description: "Answers questions about the weather, in text or voice.",
			caps: []lmosproto.Capability{
				{ID: "weather-forecast", Version: "1.2.0", Examples: []string{"Is it sunny in Bonn tomorrow?"}},
				capv("weather-alerts", "0.3.1")}}},
		{f.p1, thingSpec{id: "urn:forecast", title: "Forecast Tool", typ: lmosproto.TypeTool, vendor: "example weather gmbh",
			description: "Numerical forecast data for a grid point.",
			caps:        []lmosproto.Capability{capv("weather-forecast", "2.0.0")}}},
		{f.p1, thingSpec{id: "urn:translate", title: "Translator", vendor: "LinguaCorp",
			description: "Translates text between languages, including weather reports.",
			caps:        []lmosproto.Capability{capv("translate", "1.0.0")}, groups: []string{"g1"}}},
		{f.p2, thingSpec{id: "urn:radar", title: "Rain Radar", typ: lmosproto.TypeTool, vendor: "Radar AG",
			description: "Radar images of rain and snow.",
			caps:        []lmosproto.Capability{{ID: "weather-forecast", Description: "Nowcast of rain for the next two hours."}}}},
		{f.p2, thingSpec{id: "urn:billing", title: "Billing Agent", vendor: "Telco",
			description: "Explains invoices and tariffs.",
			caps:        []lmosproto.Capability{capv("billing", "3.1.4")}, groups: []string{"g1", "g2"}}},
		{f.p2, thingSpec{id: "urn:weather", title: "WeatherAgent", vendor: "Telco",
			description: "A telco's own weather chatbot.",
			caps:        []lmosproto.Capability{capv("weather-forecast", "1.0.0-beta.1")}}},
	}
	for _, th := range things {
		th.spec.seq = 1
		mustPut(t, f.d, th.p.sign(t, th.spec, t0), nil, Created)
	}
	return f
}

// ids names the results "id/publisher index".
func (f queryFixture) ids(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		n := map[string]int{string(f.p0.id): 0, string(f.p1.id): 1, string(f.p2.id): 2}[string(e.Publisher)]
		out[i] = fmt.Sprintf("%s/%d", strings.TrimPrefix(e.ThingID, "urn:"), n)
	}
	return out
}

func TestSearchFilters(t *testing.T) {
	f := newQueryFixture(t)
	tests := []struct {
		name string
		q    Query
		want []string // in order
	}{
		{"all", Query{}, []string{"billing/2", "forecast/1", "radar/2", "translate/1", "weather/0", "weather/2"}},
		{"type agent", Query{Type: "agent"}, []string{"billing/2", "translate/1", "weather/0", "weather/2"}},
		{"type lmos:Tool", Query{Type: "lmos:Tool"}, []string{"forecast/1", "radar/2"}},
		{"type Tool", Query{Type: "Tool"}, []string{"forecast/1", "radar/2"}},
		{"unknown type", Query{Type: "saref:Lamp"}, nil},
		{"capability", Query{Capability: "weather-forecast"}, []string{"forecast/1", "radar/2", "weather/0", "weather/2"}},
		{"capability ^1.2", Query{Capability: "weather-forecast@^1.2"}, []string{"weather/0"}},
		{"capability >=1.0", Query{Capability: "weather-forecast@>=1.0"}, []string{"forecast/1", "weather/0"}},
		{"capability prerelease range", Query{Capability: "weather-forecast", Version: ">=1.0.0-0 <1.1"}, []string{"weather/2"}},
		{"capability version field", Query{Capability: "weather-forecast", Version: "^2"}, []string{"forecast/1"}},
		{"capability and type", Query{Capability: "weather-forecast", Type: "tool"}, []string{"forecast/1", "radar/2"}},
		{"unknown capability", Query{Capability: "teleport"}, nil},
		{"vendor any case", Query{Vendor: "EXAMPLE weather GmbH"}, []string{"forecast/1", "weather/0"}},
		{"publisher", Query{Publisher: f.p1.id}, []string{"forecast/1", "translate/1"}},
		{"group", Query{Group: "g1"}, []string{"billing/2", "translate/1"}},
		{"group g2 and vendor", Query{Group: "g2", Vendor: "telco"}, []string{"billing/2"}},
		{"all filters", Query{Type: "agent", Capability: "weather-forecast@1.x", Vendor: "telco", Publisher: f.p2.id}, nil},
		{"visible: public only", Query{Visible: func(e Entry) bool { return len(e.Groups) == 0 }},
			[]string{"forecast/1", "radar/2", "weather/0", "weather/2"}},
		{"visible: member of g2", Query{Visible: func(e Entry) bool { return len(e.Groups) == 0 || slices.Contains(e.Groups, "g2") }, Type: "agent"},
			[]string{"billing/2", "weather/0", "weather/2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.d.Search(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := f.ids(r.Entries)
			if !slices.Equal(got, tt.want) || r.Total != len(tt.want) {
				t.Fatalf("got %v (total %d), want %v", got, r.Total, tt.want)
			}
		})
	}
}

// TestSearchAsksOnce: Visible is asked of the Things restricted to groups
// only, and Rank once per publisher of the candidates, however many of
// its Things match.
func TestSearchAsksOnce(t *testing.T) {
	f := newQueryFixture(t)
	var asked []string
	ranked := map[string]int{}
	r, err := f.d.Search(Query{
		Visible: func(e Entry) bool {
			asked = append(asked, f.ids([]Entry{e})[0])
			return false
		},
		Rank: func(p peer.ID) int {
			ranked[f.ids([]Entry{{Publisher: p}})[0]]++
			return 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if got := f.ids(r.Entries); !slices.Equal(got, []string{"forecast/1", "radar/2", "weather/0", "weather/2"}) {
		t.Errorf("visible to no group: %v", got)
	}
	if !slices.Equal(asked, []string{"billing/2", "translate/1"}) {
		t.Errorf("Visible asked of %v, want the two Things of groups", asked)
	}
	if want := map[string]int{"/0": 1, "/1": 1, "/2": 1}; !maps.Equal(ranked, want) {
		t.Errorf("Rank asked %v, want once per publisher: %v", ranked, want)
	}
}

func TestSearchBadQuery(t *testing.T) {
	f := newQueryFixture(t)
	for _, q := range []Query{
		{Capability: "weather-forecast@^1", Version: "^2"},
		{Capability: "weather-forecast@not a range"},
		{Version: "^1"},
		{Limit: -1},
		{Offset: -1},
	} {
		if _, err := f.d.Search(q); err == nil {
			t.Errorf("%+v: no error", q)
		}
	}
}

func TestSearchText(t *testing.T) {
	f := newQueryFixture(t)
	tests := []struct {
		text string
		want []string
	}{
		// Title matches ("WeatherAgent" splits into weather, agent) rank
		// first, then capability ids, then a mention in a description.
		{"weather", []string{"weather/0", "weather/2", "forecast/1", "radar/2", "translate/1"}},
		{"weatheragent", []string{"weather/2", "weather/0"}}, // same title, shorter text first
		{"rain", []string{"radar/2"}},
		{"RAIN radar", []string{"radar/2"}},
		{"invoices", []string{"billing/2"}},
		// Capability ids and examples are searched.
		{"alerts", []string{"weather/0"}},
		{"Bonn", []string{"weather/0"}},
		{"the of and", nil},
		{"teleportation", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			r, err := f.d.Search(Query{Text: tt.text})
			if err != nil {
				t.Fatal(err)
			}
			got := f.ids(r.Entries)
			if !slices.Equal(got, tt.want) {
				var scores []string
				for _, e := range r.Entries {
					scores = append(scores, fmt.Sprintf("%.3f", e.Score))
				}
				t.Fatalf("got %v scores %v, want %v", got, scores, tt.want)
			}
			for i := 1; i < len(r.Entries); i++ {
				if r.Entries[i].Score > r.Entries[i-1].Score {
					t.Fatalf("not ranked by score: %v", r.Entries)
				}
			}
		})
	}
	// Text combines with filters.
	r, err := f.d.Search(Query{Text: "weather", Type: "tool"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ids(r.Entries); !slices.Equal(got, []string{"forecast/1", "radar/2"}) {
		t.Fatalf("weather tools: %v", got)
	}
}

func TestSearchTextTitleWeighsMore(t *testing.T) {
	p := newPublisher(t, 1)
	d := open(t, memStore(), p.id, newClock(), Config{})
	desc := "A general assistant."
	mustPut(t, d, p.sign(t, thingSpec{id: "urn:a", title: "Assistant", description: "Helps with geology questions.", seq: 1}, t0), nil, Created)
	mustPut(t, d, p.sign(t, thingSpec{id: "urn:b", title: "Geology Assistant", description: desc, seq: 1}, t0), nil, Created)
	r, err := d.Search(Query{Text: "geology"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 2 || r.Entries[0].ThingID != "urn:b" {
		t.Fatalf("title match not first: %+v", r.Entries)
	}
}

func TestSearchPagination(t *testing.T) {
	f := newQueryFixture(t)
	for _, q := range []Query{{}, {Text: "weather forecast rain"}, {ByID: true}, {ByID: true, Text: "weather"}} {
		all, err := f.d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		for limit := 1; limit <= 4; limit++ {
			var paged []string
			for off := 0; off < all.Total+2; off += limit {
				q.Offset, q.Limit = off, limit
				r, err := f.d.Search(q)
				if err != nil {
					t.Fatal(err)
				}
				if r.Total != all.Total || len(r.Entries) > limit {
					t.Fatalf("offset %d limit %d: total %d, %d entries", off, limit, r.Total, len(r.Entries))
				}
				paged = append(paged, f.ids(r.Entries)...)
			}
			if want := f.ids(all.Entries); !slices.Equal(paged, want) {
				t.Fatalf("text %q limit %d: pages %v, want %v", q.Text, limit, paged, want)
			}
		}
	}
}

func TestSearchFollowsChanges(t *testing.T) {
	f := newQueryFixture(t)
	// The forecast tool drops its capability and is renamed.
	mustPut(t, f.d, f.p1.sign(t, thingSpec{id: "urn:forecast", title: "Grid Tool", typ: lmosproto.TypeTool, seq: 2,
		caps: []lmosproto.Capability{capv("grid", "1.0.0")}}, t0), nil, Updated)
	r, _ := f.d.Search(Query{Capability: "weather-forecast"})
	if got := f.ids(r.Entries); !slices.Equal(got, []string{"radar/2", "weather/0", "weather/2"}) {
		t.Fatalf("after update: %v", got)
	}
	r, _ = f.d.Search(Query{Text: "grid"})
	if got := f.ids(r.Entries); !slices.Equal(got, []string{"forecast/1"}) {
		t.Fatalf("text after update: %v", got)
	}
	mustPut(t, f.d, f.p2.tombstone(t, "urn:radar", 2, t0), nil, Deleted)
	r, _ = f.d.Search(Query{Text: "rain"})
	if r.Total != 0 {
		t.Fatalf("tombstoned thing found: %v", f.ids(r.Entries))
	}
	r, _ = f.d.Search(Query{Type: "tool"})
	if got := f.ids(r.Entries); !slices.Equal(got, []string{"forecast/1"}) {
		t.Fatalf("tools after delete: %v", got)
	}
}

func TestSearchCapabilityListedTwice(t *testing.T) {
	p := newPublisher(t, 1)
	d := open(t, memStore(), p.id, newClock(), Config{})
	mustPut(t, d, p.sign(t, thingSpec{id: "urn:two", seq: 1,
		caps: []lmosproto.Capability{capv("convert", "1.4.0"), capv("convert", "2.1.0")}}, t0), nil, Created)
	mustPut(t, d, p.sign(t, thingSpec{id: "urn:one", seq: 1,
		caps: []lmosproto.Capability{capv("convert", "2.0.0")}}, t0), nil, Created)
	for constraint, want := range map[string]int{"^1": 1, "^2": 2, "^3": 0, "": 2} {
		q := Query{Capability: "convert", Version: constraint}
		r, err := d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Total != want {
			t.Errorf("convert@%s: %d matches, want %d", constraint, r.Total, want)
		}
	}
	// Removing the Thing that lists it twice leaves a consistent index.
	mustPut(t, d, p.tombstone(t, "urn:two", 2, t0), nil, Deleted)
	if r, _ := d.Search(Query{Capability: "convert@^2"}); r.Total != 1 || r.Entries[0].ThingID != "urn:one" {
		t.Fatalf("after removal: %+v", r)
	}
}

// TestSearchManyVersions: a capability held at more distinct versions
// than its list keeps beside its postings (maxVersions) still matches
// each version range exactly: the versions past the table are checked on
// the Thing.
func TestSearchManyVersions(t *testing.T) {
	p := newPublisher(t, 1)
	d := open(t, memStore(), p.id, newClock(), Config{})
	const n = maxVersions + 40
	for i := range n {
		mustPut(t, d, p.sign(t, thingSpec{id: fmt.Sprintf("urn:v:%d", i), seq: 1,
			caps: []lmosproto.Capability{capv("convert", fmt.Sprintf("1.%d.0", i))}}, t0), nil, Created)
	}
	for constraint, want := range map[string]int{
		"1.0.0": 1, fmt.Sprintf("1.%d.0", n-1): 1, fmt.Sprintf(">=1.%d.0", maxVersions-10): n - (maxVersions - 10), "^1": n, "^2": 0,
	} {
		r, err := d.Search(Query{Capability: "convert", Version: constraint, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if r.Total != want {
			t.Errorf("convert@%s: %d matches, want %d", constraint, r.Total, want)
		}
	}
}

// TestConcurrentSearchAndPut runs queries while Things are put, updated
// and purged (run with -race).
func TestConcurrentSearchAndPut(t *testing.T) {
	p := newPublisher(t, 1)
	clock := newClock()
	d := open(t, memStore(), p.id, clock, Config{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, q := range []Query{{Text: "weather"}, {Capability: "weather-forecast@^1", Limit: 5}, {Type: "agent", Offset: 3, Limit: 3}} {
				if _, err := d.Search(q); err != nil {
					t.Error(err)
					return
				}
			}
			d.Lookup("urn:c:3")
			d.Own()
		}
	}()
	td := thingSpec{seq: 1}.td(t)
	for i := range 300 {
		td := td.Clone()
		td.ID = fmt.Sprintf("urn:c:%d", i%40)
		td.Seq = uint64(i + 1)
		td.Title = fmt.Sprintf("Weather %d", i)
		if _, err := d.Put(p.unsigned(t, td, t0), nil); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	if d.Len() != 40 {
		t.Fatalf("Len = %d, want 40", d.Len())
	}
}

// TestSearchByID: Query.ByID orders by thing id, then publisher, with and
// without text, and pages in that order.
func TestSearchByID(t *testing.T) {
	f := newQueryFixture(t)
	for _, q := range []Query{{ByID: true}, {ByID: true, Text: "weather rain"}, {ByID: true, Type: "agent", Offset: 1, Limit: 2}} {
		r, err := f.d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.d.Search(Query{Text: q.Text, Type: q.Type})
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(all.Entries)
		slices.SortFunc(want, func(a, b Entry) int {
			return cmp.Or(cmp.Compare(a.ThingID, b.ThingID), cmp.Compare(a.Publisher, b.Publisher))
		})
		if q.Limit > 0 {
			want = want[q.Offset : q.Offset+q.Limit]
		}
		if got := f.ids(r.Entries); !slices.Equal(got, f.ids(want)) || r.Total != all.Total || len(want) == 0 {
			t.Errorf("%+v: %v (total %d), want %v (total %d)", q, got, r.Total, f.ids(want), all.Total)
		}
	}
}

// TestSearchPagesAgree: a capability query finds what was put, and a
// page of any query is the same slice of the query's whole ordered
// result, over random Things whose titles share their first 8 bytes or
// not, of online and offline publishers, with and without text, a
// publisher rank and a version constraint. A query keeps only the hits
// that may make its page (a heap of offset + limit) and reads a single
// list's candidates in batches; this checks both against the whole.
func TestSearchPagesAgree(t *testing.T) {
	clock := newClock()
	pubs := []publisher{newPublisher(t, 1), newPublisher(t, 2), newPublisher(t, 3), newPublisher(t, 4)}
	d := open(t, memStore(), pubs[0].id, clock, Config{})
	r := rand.New(rand.NewPCG(7, 8))
	titles := []string{"Weather station", "Weather stations", "Weather", "Alpha", "alpha", "Zulu agent", "Weather station 2"}
	words := []string{"rain", "snow", "sun", "wind"}
	type held struct {
		major int // the capability's major version
		tool  bool
	}
	things := map[string]held{} // by "id publisher"
	for i := range 120 {
		p := pubs[r.IntN(len(pubs))]
		spec := thingSpec{id: fmt.Sprintf("urn:p:%d", r.IntN(90)), title: titles[r.IntN(len(titles))],
			description: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))],
			caps:        []lmosproto.Capability{capv("forecast", fmt.Sprintf("%d.0.0", 1+i%3))}, seq: uint64(1 + i)}
		if i%4 == 0 {
			spec.typ = lmosproto.TypeTool
		}
		if _, err := d.Put(p.sign(t, spec, t0), nil); err != nil {
			t.Fatal(err)
		}
		things[spec.id+" "+p.id.String()] = held{1 + i%3, i%4 == 0}
	}
	// The whole results of the queries with a capability, against what was
	// put: every Thing held (or those at 2.0.0 and above, or the tools),
	// once each. With a type, the type's list drives or filters (the
	// tools' list is the shorter, the agents' the longer).
	for _, c := range []struct {
		q    Query
		min  int
		tool *bool
	}{
		{Query{Capability: "forecast"}, 1, nil},
		{Query{Capability: "forecast@>=2.0.0"}, 2, nil},
		{Query{Capability: "forecast@>=2.0.0", Type: "tool"}, 2, new(true)},
		{Query{Capability: "forecast@>=2.0.0", Type: "agent"}, 2, new(false)},
	} {
		res, err := d.Search(c.q)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, e := range res.Entries {
			got = append(got, e.ThingID+" "+e.Publisher.String())
		}
		for k, h := range things {
			if h.major >= c.min && (c.tool == nil || *c.tool == h.tool) {
				want = append(want, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if res.Total != len(want) || !slices.Equal(got, want) {
			t.Fatalf("%+v: total %d, %d entries; want %d: %v", c.q, res.Total, len(got), len(want), want)
		}
	}
	// Publishers 2 and 3 go offline; 1 stays online.
	clock.Advance(DefaultOfflineAfter + time.Minute)
	d.Seen(pubs[1].id, clock.Now())
	rank := func(p peer.ID) int {
		if p == pubs[2].id {
			return 1
		}
		return 0
	}
	for _, q := range []Query{
		{}, {Capability: "forecast"}, {Capability: "forecast@>=2.0.0"}, {Capability: "forecast", Type: "agent"}, {Text: "rain sun"},
		{Rank: rank}, {Text: "snow", Rank: rank}, {Online: true}, {ByID: true}, {ByID: true, Rank: rank},
	} {
		all, err := d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 3, 7} {
			for _, offset := range []int{0, 2, 11} {
				q.Limit, q.Offset = limit, offset
				res, err := d.Search(q)
				if err != nil {
					t.Fatal(err)
				}
				want := all.Entries[min(offset, len(all.Entries)):]
				want = want[:min(limit, len(want))]
				if res.Total != all.Total || !slices.EqualFunc(res.Entries, want, sameEntry) {
					t.Fatalf("%+v: total %d, %v; want %d, %v", q, res.Total, entryKeys(res.Entries), all.Total, entryKeys(want))
				}
			}
		}
	}
}

func sameEntry(a, b Entry) bool { return a.Publisher == b.Publisher && a.ThingID == b.ThingID }

func entryKeys(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ThingID + "/" + e.Title + "/" + e.Publisher.String()[len(e.Publisher.String())-4:]
	}
	return out
}

// TestHolds: Holds answers what Search's total says, for queries that
// match many Things, one, or none (a version range, a visibility that
// hides them all), with and without free text.
func TestHolds(t *testing.T) {
	d, c := corpusDirectory(t, 2000)
	none := func(Entry) bool { return false }
	// late is a version of the popular capability that one Thing offers,
	// put after a batch of others: a search for it finds its one match
	// late in the candidates.
	all, err := d.Search(Query{Capability: c.Caps[0]})
	if err != nil || all.Total <= 2*metaBatch {
		t.Fatalf("%d Things of %s, %v", all.Total, c.Caps[0], err)
	}
	byVersion := map[string][]int{} // the Things' numbers, by version
	vendors := map[string]string{}  // the Things' vendors, by version
	for _, e := range all.Entries {
		n, _ := strconv.Atoi(strings.TrimPrefix(e.ThingID, "urn:bench:"))
		for _, cp := range e.Capabilities {
			if cp.ID == c.Caps[0] {
				byVersion[cp.Version] = append(byVersion[cp.Version], n)
				vendors[cp.Version] = e.Vendor
			}
		}
	}
	var numbers []int
	for _, ns := range byVersion {
		numbers = append(numbers, ns...)
	}
	slices.Sort(numbers)
	late := ""
	for v, ns := range byVersion {
		if len(ns) == 1 && ns[0] > numbers[2*metaBatch] {
			late = v
		}
	}
	if late == "" {
		t.Fatal("no version offered once, late")
	}
	for _, q := range []Query{
		{Capability: c.Caps[0]}, {Capability: c.Caps[0] + "@>=99"}, {Capability: c.Caps[1999]},
		{Type: "tool"}, {Type: "tool", Visible: none}, {Vendor: c.Vendors[3], Type: "agent"},
		{Group: "group-7"}, {Group: "group-7", Visible: none}, {Text: c.Words[0]}, {Text: "nosuchword"}, {},
		{Capability: c.Caps[0] + "@=" + late}, {Capability: c.Caps[0] + "@=" + late, Type: "agent"},
		{Capability: c.Caps[0] + "@=" + late, Vendor: vendors[late]}, // filtered one at a time
	} {
		res, err := d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		held, err := d.Holds(q)
		if err != nil || held != (res.Total > 0) {
			t.Errorf("%+v: Holds %v, %v; Search's total %d", q, held, err, res.Total)
		}
	}
}

// TestSortOrders: a search in a Query.Sort order pages what sorting every
// match by that order (online first, then the field, id and publisher,
// each reversed with Desc) gives, with its total, for filters with and
// without free text.
func TestSortOrders(t *testing.T) {
	d, c := corpusDirectory(t, 1500)
	all, err := d.Search(Query{})
	if err != nil {
		t.Fatal(err)
	}
	// Some publishers online, so that both parts have Things.
	for i, e := range all.Entries {
		if i%7 == 0 {
			d.Seen(e.Publisher, time.Now())
		}
	}
	fields := map[SortKey]func(a, b Entry) int{
		SortID:        func(a, b Entry) int { return 0 },
		SortTitle:     func(a, b Entry) int { return cmp.Compare(a.Title, b.Title) },
		SortCreated:   func(a, b Entry) int { return a.Created.Compare(b.Created) },
		SortModified:  func(a, b Entry) int { return a.Modified.Compare(b.Modified) },
		SortRelevance: func(a, b Entry) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Title, b.Title)) },
	}
	for _, base := range []Query{{}, {Type: "tool"}, {Text: c.Words[0]}, {Text: c.Words[1] + " " + c.Words[2], Type: "agent"}} {
		every, err := d.Search(base)
		if err != nil || every.Total < 20 {
			t.Fatalf("%+v: %d matches, %v", base, every.Total, err)
		}
		for field, by := range fields {
			for _, desc := range []bool{false, true} {
				want := slices.Clone(every.Entries)
				slices.SortFunc(want, func(a, b Entry) int {
					if a.Online != b.Online {
						if a.Online {
							return -1
						}
						return 1
					}
					c := cmp.Or(by(a, b), cmp.Compare(a.ThingID, b.ThingID), cmp.Compare(a.Publisher, b.Publisher))
					if desc {
						return -c
					}
					return c
				})
				if !want[0].Online || want[len(want)-1].Online {
					t.Fatalf("%+v: want online and offline Things", base)
				}
				for _, page := range [][2]int{{0, 0}, {0, 10}, {7, 5}, {len(want) - 3, 10}} {
					q := base
					q.Sort, q.Desc, q.Offset, q.Limit = field, desc, page[0], page[1]
					res, err := d.Search(q)
					if err != nil {
						t.Fatal(err)
					}
					end := len(want)
					if page[1] > 0 {
						end = min(end, page[0]+page[1])
					}
					if res.Total != len(want) || res.Next != "" || !slices.EqualFunc(res.Entries, want[page[0]:end], sameThing) {
						t.Errorf("%+v sort %d desc %t offset %d limit %d: total %d next %q, %v; want %d, %v", base, field, desc, page[0], page[1],
							res.Total, res.Next, thingIDs(res.Entries), len(want), thingIDs(want[page[0]:end]))
					}
				}
			}
		}
	}
	if _, err := d.Search(Query{Sort: SortTitle, ByID: true}); err == nil {
		t.Error("Sort with ByID: no error")
	}
}

func sameThing(a, b Entry) bool { return a.Publisher == b.Publisher && a.ThingID == b.ThingID }

func thingIDs(es []Entry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ThingID
	}
	return ids
}
