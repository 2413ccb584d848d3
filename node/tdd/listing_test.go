package tdd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// fleet publishes a few own Things and learns a few.
func fleet(t *testing.T, env *tddtest.Env) (other tddtest.Identity) {
	t.Helper()
	other = tddtest.NewIdentity(2)
	for _, s := range []thing{
		{id: "urn:a1", title: "Weather agent", desc: "Forecasts rain and sun", vendor: "Sky GmbH", caps: []string{"weather-forecast@1.2.0"}},
		{id: "urn:a2", title: "Billing agent", desc: "Explains invoices", vendor: "Telco AG", caps: []string{"billing@2.0.0"}},
		{id: "urn:t1", title: "Geocoder", typ: "lmos:Tool", vendor: "Maps AG", caps: []string{"geocode@2.0.0"}},
	} {
		if r := do(t, http.MethodPut, env.URL+"/things/"+s.id, s.json(t)); r.status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", s.id, r.status, r.body)
		}
	}
	for _, s := range []thing{
		{id: "urn:b1", title: "Storm warner", desc: "Warns of storms and rain", vendor: "sky gmbh", caps: []string{"weather-forecast@2.1.0", "alerts"}},
		{id: "urn:b2", title: "Router tool", typ: "lmos:Tool", vendor: "Net Inc", caps: []string{"diagnostics@0.9.0"}, groups: []string{"g-ops"}},
	} {
		env.Learn(t, other, s.td(t), 1)
	}
	return other
}

func TestListingFilters(t *testing.T) {
	env := tddtest.NewEnv(t)
	other := fleet(t, env)
	tests := []struct {
		query string
		want  []string // ids in order
	}{
		{"", []string{"urn:a1", "urn:a2", "urn:b1", "urn:b2", "urn:t1"}}, // by id
		{"type=agent", []string{"urn:a1", "urn:a2", "urn:b1"}},
		{"type=TOOL", []string{"urn:b2", "urn:t1"}},
		{"type=lmos:Tool", []string{"urn:b2", "urn:t1"}},
		{"capability=weather-forecast", []string{"urn:a1", "urn:b1"}},
		{"capability=" + url.QueryEscape("weather-forecast@^1.0"), []string{"urn:a1"}},
		{"capability=" + url.QueryEscape("weather-forecast@>=2"), []string{"urn:b1"}},
		{"capability=alerts", []string{"urn:b1"}},
		{"vendor=SKY+GMBH", []string{"urn:a1", "urn:b1"}},
		{"publisher=" + other.ID.String(), []string{"urn:b1", "urn:b2"}},
		{"publisher=" + url.QueryEscape(env.Self.DID()), []string{"urn:a1", "urn:a2", "urn:t1"}},
		{"group=g-ops", []string{"urn:b2"}},
		{"q=rain", []string{"urn:a1", "urn:b1"}}, // ranked; ties by title
		{"q=storm", []string{"urn:b1"}},
		{"q=weather&type=agent&vendor=sky+gmbh", []string{"urn:a1", "urn:b1"}},
		{"type=agent&capability=geocode", nil},
		{"q=the", nil},
		{"capability=nothing", nil},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?"+tc.query, nil)))
			if tc.query == "q=rain" {
				slices.Sort(got) // both mention rain once; the order is the ranker's
				want := slices.Clone(tc.want)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("ids %v, want %v", got, tc.want)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ids %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListingPagination(t *testing.T) {
	env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.DefaultLimit, c.MaxLimit = 2, 3 })
	fleet(t, env)

	var all []string
	next := env.URL + "/things?type=agent&limit=1"
	pages := 0
	for next != "" {
		r := do(t, http.MethodGet, next, nil)
		all = append(all, ids(tdList(t, r))...)
		next = ""
		if link := nextLink(r); link != "" {
			if !strings.HasPrefix(link, env.URL+"/things?") {
				t.Fatalf("next link %q", link)
			}
			next = link
			if q, _ := url.Parse(next); q.Query().Get("type") != "agent" {
				t.Errorf("next link %q dropped the filter", next)
			}
		}
		if pages++; pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if want := []string{"urn:a1", "urn:a2", "urn:b1"}; !slices.Equal(all, want) || pages != 3 {
		t.Errorf("pages %d, ids %v, want 3 pages of %v", pages, all, want)
	}

	// Default page size and the cap.
	r := do(t, http.MethodGet, env.URL+"/things", nil)
	if n := len(tdList(t, r)); n != 2 || !strings.Contains(nextLink(r), "cursor=") || !strings.Contains(nextLink(r), "limit=2") {
		t.Errorf("default page: %d TDs, next %q", n, nextLink(r))
	}
	r = do(t, http.MethodGet, env.URL+"/things?limit=100", nil)
	if n := len(tdList(t, r)); n != 3 || !strings.Contains(nextLink(r), "limit=3") {
		t.Errorf("capped page: %d TDs, next %q", n, nextLink(r))
	}
	r = do(t, http.MethodGet, env.URL+"/things?offset=4", nil)
	if n := len(tdList(t, r)); n != 1 || nextLink(r) != "" {
		t.Errorf("last page: %d TDs, next %q", n, nextLink(r))
	}
	if n := len(tdList(t, do(t, http.MethodGet, env.URL+"/things?offset=50", nil))); n != 0 {
		t.Errorf("beyond the end: %d TDs", n)
	}
}

func TestListingBadQueries(t *testing.T) {
	env := tddtest.NewEnv(t)
	for _, tc := range []struct {
		query  string
		status int
		detail string
	}{
		{"limit=0", 400, "limit"},
		{"limit=x", 400, "limit"},
		{"offset=-1", 400, "offset"},
		{"offset=1&offset=2", 400, "offset"},
		{"capability=" + url.QueryEscape("c@not a range"), 400, "capability"},
		{"capability=" + url.QueryEscape("@1.0"), 400, "capability"},
		{"publisher=12D3Koo", 404, "publisher"}, // a short form (the end of a peer ID) that no publisher held has
		{"publisher=12D", 400, "publisher"},
		{"publisher=did:key:zzz", 400, "publisher"},
		{"format=xml", 400, "format"},
		{"format=collection&format=array", 400, "format"},
		{"sort_by=description", 400, "sort_by"},
		{"sort_order=up", 400, "sort_order"},
		{"enriched=maybe", 400, "enriched"},
	} {
		p := problem(t, do(t, http.MethodGet, env.URL+"/things?"+tc.query, nil), tc.status)
		if !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: detail %q lacks %q", tc.query, p.Detail, tc.detail)
		}
	}
	// format=array is the default and accepted.
	tdList(t, do(t, http.MethodGet, env.URL+"/things?format=array", nil))
}

// TestListingAsksFinder: a capability filter asks the Finder, on a local
// hit too (the federation decides whether that asks the network); on a
// miss, what it stored is listed.
func TestListingAsksFinder(t *testing.T) {
	remote := tddtest.NewIdentity(7)
	var calls atomic.Int32
	var env *tddtest.Env
	env = tddtest.NewEnv(t, func(d *tdd.Deps, c *tdd.Config) {
		c.FindTimeout = 200 * time.Millisecond
		d.Finder = tddtest.LookupFunc(func(ctx context.Context, id string) error {
			calls.Add(1)
			switch id {
			case "translate":
				// As the federation does: store what was found.
				env.Learn(t, remote, thing{id: "urn:r1", title: "Translator", caps: []string{"translate@1.0.0"}}.td(t), 1)
				env.Learn(t, remote, thing{id: "urn:r2", title: "Old translator", typ: "lmos:Tool", caps: []string{"translate@0.1.0"}}.td(t), 1)
				return nil
			case "slow":
				<-ctx.Done()
				return ctx.Err()
			}
			return errors.New("dht: no providers")
		})
	})
	fleet(t, env)

	// A local hit asks too, and a failed lookup leaves the local answer.
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?capability=geocode", nil))); !slices.Equal(got, []string{"urn:t1"}) || calls.Load() != 1 {
		t.Fatalf("local hit: %v, %d finder calls", got, calls.Load())
	}
	// A miss asks, and the request's other filters apply to the answer.
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?capability=translate@^1", nil))); !slices.Equal(got, []string{"urn:r1"}) {
		t.Errorf("miss with range: %v", got)
	}
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?capability=translate&type=tool", nil))); !slices.Equal(got, []string{"urn:r2"}) {
		t.Errorf("miss with type: %v", got)
	}
	if calls.Load() != 3 {
		t.Errorf("%d finder calls, want 3: one per capability query", calls.Load())
	}
	// A failed lookup is an empty answer, not an error.
	if got := tdList(t, do(t, http.MethodGet, env.URL+"/things?capability=nothing", nil)); len(got) != 0 {
		t.Errorf("failed lookup: %v", ids(got))
	}
	start := time.Now()
	if got := tdList(t, do(t, http.MethodGet, env.URL+"/things?capability=slow", nil)); len(got) != 0 {
		t.Errorf("slow lookup: %v", ids(got))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("slow lookup took %s; FindTimeout is 200ms", d)
	}
}

func TestVisibility(t *testing.T) {
	// The group layer plugs in here: hide Things that name groups.
	env := tddtest.NewEnv(t, opsMembersOnly)
	other := fleet(t, env)
	member := []string{"X-Test-Member", "g-ops"}

	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?type=tool", nil))); !slices.Equal(got, []string{"urn:t1"}) {
		t.Errorf("outsider lists %v", got)
	}
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?type=tool", nil, member...))); !slices.Equal(got, []string{"urn:b2", "urn:t1"}) {
		t.Errorf("member lists %v", got)
	}
	problem(t, do(t, http.MethodGet, env.URL+"/things/urn:b2", nil), http.StatusNotFound)
	problem(t, do(t, http.MethodGet, env.URL+"/things/urn:b2?publisher="+other.ID.String(), nil), http.StatusNotFound)
	if r := do(t, http.MethodGet, env.URL+"/things/urn:b2", nil, member...); r.status != http.StatusOK {
		t.Errorf("member GET: %d", r.status)
	}
}

// nextLink is the URL of the Link header with rel="next", "" if none.
func nextLink(r response) string {
	for _, l := range r.header.Values("Link") {
		if u, rel, ok := strings.Cut(l, ">; "); ok && rel == `rel="next"` {
			return strings.TrimPrefix(u, "<")
		}
	}
	return ""
}

// opsMembersOnly is the group layer as a test sees it: a caller with
// "X-Test-Member: g-ops" sees everything, any other only Things without
// groups.
func opsMembersOnly(d *tdd.Deps, _ *tdd.Config) {
	d.Visibility = func(r *http.Request) func(directory.Entry) bool {
		if r.Header.Get("X-Test-Member") == "g-ops" {
			return nil
		}
		return func(e directory.Entry) bool { return len(e.Groups) == 0 }
	}
}

// TestListingOnline: learned Things whose publisher was not seen within
// the directory's OfflineAfter are listed after the online ones, marked in
// LMOS-Online and the enriched registration, and left out by online=true.
func TestListingOnline(t *testing.T) {
	env := tddtest.NewEnv(t)
	fleet(t, env)
	check := func(query string, wantIDs []string, wantOnline string) {
		t.Helper()
		r := do(t, http.MethodGet, env.URL+"/things"+query, nil)
		if got := ids(tdList(t, r)); !slices.Equal(got, wantIDs) {
			t.Errorf("GET /things%s: %v, want %v", query, got, wantIDs)
		}
		if got := r.header.Get(tdd.HeaderOnline); got != wantOnline {
			t.Errorf("GET /things%s: %s %q, want %q", query, tdd.HeaderOnline, got, wantOnline)
		}
	}
	check("", []string{"urn:a1", "urn:a2", "urn:b1", "urn:b2", "urn:t1"}, "true, true, true, true, true")
	env.Clock.Advance(directory.DefaultOfflineAfter + time.Second)
	check("", []string{"urn:a1", "urn:a2", "urn:t1", "urn:b1", "urn:b2"}, "true, true, true, false, false")
	check("?sort_by=title", []string{"urn:a2", "urn:t1", "urn:a1", "urn:b2", "urn:b1"}, "true, true, true, false, false")
	check("?online=true", []string{"urn:a1", "urn:a2", "urn:t1"}, "true, true, true")
	check("?online=false", []string{"urn:a1", "urn:a2", "urn:t1", "urn:b1", "urn:b2"}, "true, true, true, false, false")
	check("?q=rain", []string{"urn:a1", "urn:b1"}, "true, false")
	if r := do(t, http.MethodGet, env.URL+"/things?online=maybe", nil); r.status != http.StatusBadRequest {
		t.Errorf("online=maybe: %d, want 400", r.status)
	}

	r := do(t, http.MethodGet, env.URL+"/things/urn:b1?enriched=true", nil)
	reg, _ := decodeMap(t, string(r.body))["registration"].(map[string]any)
	if reg["online"] != false || reg["lastSeen"] != tddtest.Epoch.Format(time.RFC3339) {
		t.Errorf("enriched registration of an offline Thing: %v", reg)
	}
	if got := r.header.Get(tdd.HeaderRegistration); !strings.Contains(got, "online=?0") {
		t.Errorf("%s: %q, want online=?0", tdd.HeaderRegistration, got)
	}
}

// TestListingPageBytes: a page ends early once its TDs would exceed
// MaxPageBytes (but holds at least one), and its next link continues
// right after it: following the links lists every Thing once.
func TestListingPageBytes(t *testing.T) {
	env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.MaxPageBytes = 1 })
	fleet(t, env)
	var all []string
	next, pages := env.URL+"/things?limit=3", 0
	for next != "" {
		r := do(t, http.MethodGet, next, nil)
		got := ids(tdList(t, r))
		if len(got) != 1 {
			t.Errorf("page %d: %v, want one TD (each is over MaxPageBytes)", pages, got)
		}
		all = append(all, got...)
		next = nextLink(r)
		if pages++; pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if want := []string{"urn:a1", "urn:a2", "urn:b1", "urn:b2", "urn:t1"}; !slices.Equal(all, want) {
		t.Errorf("ids %v, want %v", all, want)
	}
}

// TestListingCursor: the next link of a listing in id order carries a
// cursor, which continues after the last TD served also when a Thing
// before it goes; offset still pages (old clients); a cursor is refused
// for another order, whose next link keeps paging by offset, and a
// cursor that is not one is a 400.
func TestListingCursor(t *testing.T) {
	env := tddtest.NewEnv(t, func(*tdd.Deps, *tdd.Config) {})
	fleet(t, env)
	first := do(t, http.MethodGet, env.URL+"/things?limit=2", nil)
	if got := ids(tdList(t, first)); !slices.Equal(got, []string{"urn:a1", "urn:a2"}) {
		t.Fatalf("first page %v", got)
	}
	next := nextLink(first)
	if u, _ := url.Parse(next); u == nil || u.Query().Get("cursor") == "" {
		t.Fatalf("next link %q without a cursor", next)
	}
	// urn:a1 goes: by offset the next page would skip urn:b1.
	if r := do(t, http.MethodDelete, env.URL+"/things/urn:a1", nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE urn:a1: %d %s", r.status, r.body)
	}
	if got := ids(tdList(t, do(t, http.MethodGet, next, nil))); !slices.Equal(got, []string{"urn:b1", "urn:b2"}) {
		t.Errorf("page after the cursor: %v, want [urn:b1 urn:b2]", got)
	}
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?limit=2&offset=2", nil))); !slices.Equal(got, []string{"urn:b2", "urn:t1"}) {
		t.Errorf("page at offset 2: %v", got)
	}
	byTitle := nextLink(do(t, http.MethodGet, env.URL+"/things?limit=1&sort_by=title", nil))
	if u, _ := url.Parse(byTitle); u == nil || u.Query().Get("offset") != "1" || u.Query().Has("cursor") {
		t.Errorf("next link by title %q: want offset=1", byTitle)
	}
	cursor := url.QueryEscape(mustQuery(t, next).Get("cursor"))
	for _, bad := range []string{"cursor=x!", "cursor=", "sort_by=title&cursor=" + cursor, "q=rain&cursor=" + cursor, "sort_order=desc&cursor=" + cursor} {
		if r := do(t, http.MethodGet, env.URL+"/things?"+bad, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, r.status)
		}
	}
}

func mustQuery(t *testing.T, u string) url.Values {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query()
}

// TestTextListingPages: free text without sort_by is paged by the
// directory in its order of relevance: following the next links gives
// the whole listing once, a page at an offset is its slice, the total
// counts every match, and sort_order=desc reverses it.
func TestTextListingPages(t *testing.T) {
	env := tddtest.NewEnv(t)
	for i, n := range []int{1, 6, 3, 8, 2, 5, 7, 4, 1} {
		desc := strings.Repeat("harbour ", n) + strings.Repeat("pilot ", 9-n)
		put(t, env, thing{id: fmt.Sprintf("urn:h%d", i), title: fmt.Sprintf("Pilot %d", i), desc: desc})
	}
	put(t, env, thing{id: "urn:other", title: "Other", desc: "ferries and tides"})

	whole := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?q=harbour&limit=100", nil)))
	if len(whole) != 9 || slices.IsSorted(whole) {
		t.Fatalf("whole listing %v: want the 9 harbour Things, by relevance (not by id)", whole)
	}
	if got := walk(t, env, "/things?q=harbour&limit=2"); !slices.Equal(got, whole) {
		t.Errorf("pages of 2 give %v, want %v", got, whole)
	}
	var page struct {
		Total   int               `json:"total"`
		Members []json.RawMessage `json:"members"`
	}
	r := do(t, http.MethodGet, env.URL+"/things?q=harbour&limit=3&offset=4&format=collection", nil)
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatalf("collection: %v: %s", err, r.body)
	}
	var got []string
	for _, m := range page.Members {
		var td struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(m, &td); err != nil {
			t.Fatal(err)
		}
		got = append(got, td.ID)
	}
	if page.Total != 9 || !slices.Equal(got, whole[4:7]) {
		t.Errorf("offset 4, limit 3: total %d, %v; want 9, %v", page.Total, got, whole[4:7])
	}
	if got := ids(tdList(t, do(t, http.MethodGet, env.URL+"/things?q=harbour&sort_order=desc&limit=100", nil))); !slices.Equal(got, reversed(whole)) {
		t.Errorf("desc: %v, want %v", got, reversed(whole))
	}
}
