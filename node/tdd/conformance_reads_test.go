package tdd_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestConformanceReads checks the directory's reads against the assertions
// of W3C WoT Discovery (shared/spec/wot-discovery), one case per assertion
// ID. "sec-" IDs are the spec's security considerations.
func TestConformanceReads(t *testing.T) {
	cases := []struct {
		id  string
		run func(t *testing.T, env *tddtest.Env)
	}{
		// Listing.
		{"tdd-things-list-only", func(t *testing.T, env *tddtest.Env) {
			if n := len(tdList(t, get(t, env, "/things"))); n != 5 {
				t.Errorf("%d TDs listed, want the 5 held", n)
			}
		}},
		{"tdd-things-list-method", func(t *testing.T, env *tddtest.Env) {
			if r := get(t, env, "/things"); r.status != http.StatusOK {
				t.Errorf("GET /things: %d", r.status)
			}
		}},
		{"tdd-things-list-resp", func(t *testing.T, env *tddtest.Env) {
			r := get(t, env, "/things")
			var arr []map[string]any
			if r.status != http.StatusOK || json.Unmarshal(r.body, &arr) != nil || len(arr) != 5 || arr[0]["id"] == nil {
				t.Errorf("status %d, body %.200s: want 200 and an array of TDs", r.status, r.body)
			}
		}},
		{"tdd-things-list-resp-content-type", func(t *testing.T, env *tddtest.Env) {
			if ct := get(t, env, "/things").contentType(); ct != "application/ld+json" {
				t.Errorf("content type %q", ct)
			}
		}},
		{"tdd-things-list-pagination", func(t *testing.T, env *tddtest.Env) {
			if got := walk(t, env, "/things?limit=2"); !slices.Equal(got, sortedIDs) {
				t.Errorf("pages give %v, want %v", got, sortedIDs)
			}
		}},
		{"tdd-things-list-pagination-limit", func(t *testing.T, env *tddtest.Env) {
			for _, limit := range []string{"1", "2", "4"} {
				if n := len(tdList(t, get(t, env, "/things?limit="+limit))); n > int(limit[0]-'0') {
					t.Errorf("limit %s: %d TDs", limit, n)
				}
			}
		}},
		{"tdd-things-list-pagination-header-nextlink", func(t *testing.T, env *tddtest.Env) {
			if nextLink(get(t, env, "/things?limit=4")) == "" {
				t.Error("no next link though a TD follows")
			}
			if l := nextLink(get(t, env, "/things?limit=5")); l != "" {
				t.Errorf("next link %q on the last page", l)
			}
		}},
		{"tdd-things-list-pagination-header-nextlink-attr", func(t *testing.T, env *tddtest.Env) {
			// The next link continues by cursor (the listing's id order),
			// at the page offset=3 would give.
			next := nextLink(get(t, env, "/things?limit=2&offset=1&type=agent"))
			u, err := url.Parse(next)
			if err != nil {
				t.Fatal(err)
			}
			if q := u.Query(); q.Get("limit") != "2" || q.Get("cursor") == "" || q.Has("offset") || q.Get("type") != "agent" {
				t.Errorf("next link %s: want limit=2, a cursor and the filter", u)
			}
			got, want := ids(tdList(t, getURL(t, next))), ids(tdList(t, get(t, env, "/things?limit=2&offset=3&type=agent")))
			if !slices.Equal(got, want) {
				t.Errorf("next page %q, want the page at offset 3 %q", got, want)
			}
		}},
		{"tdd-things-list-pagination-header-nextlink-base", func(t *testing.T, env *tddtest.Env) {
			if l := nextLink(get(t, env, "/things?limit=1")); !strings.HasPrefix(l, env.URL+"/things?") {
				t.Errorf("next link %q is not absolute under %s", l, env.URL)
			}
		}},
		{"tdd-things-list-pagination-header-canonicallink", func(t *testing.T, env *tddtest.Env) {
			first, second := canonical(t, get(t, env, "/things?limit=2")), canonical(t, get(t, env, "/things?limit=2&offset=2"))
			if first != second || !strings.HasPrefix(first, "<"+env.URL+`/things>; rel="canonical"; etag="`) {
				t.Fatalf("canonical links %q and %q: want one link to the collection with its etag", first, second)
			}
			put(t, env, thing{id: "urn:zz", title: "New"})
			if changed := canonical(t, get(t, env, "/things?limit=2")); changed == first {
				t.Errorf("etag %q unchanged after a creation", changed)
			}
		}},
		{"tdd-things-list-pagination-order-default", func(t *testing.T, env *tddtest.Env) {
			if got := ids(tdList(t, get(t, env, "/things"))); !slices.Equal(got, sortedIDs) {
				t.Errorf("order %q, want code point order %q", got, sortedIDs)
			}
		}},
		{"tdd-things-list-pagination-order", func(t *testing.T, env *tddtest.Env) {
			got := ids(tdList(t, get(t, env, "/things?sort_by=title&sort_order=desc")))
			if want := sortedIDs; !slices.Equal(got, want) {
				t.Errorf("by title, descending: %q, want %q", got, want)
			}
			got = ids(tdList(t, get(t, env, "/things?sort_by=/id&sort_order=desc")))
			if want := reversed(slices.Clone(sortedIDs)); !slices.Equal(got, want) {
				t.Errorf("by /id, descending: %q", got)
			}
		}},
		{"tdd-things-list-pagination-orderable", func(t *testing.T, env *tddtest.Env) {
			for _, f := range []string{"description", "/description", "/properties", "security"} {
				problem(t, get(t, env, "/things?sort_by="+url.QueryEscape(f)), http.StatusBadRequest)
			}
		}},
		{"tdd-things-list-pagination-order-unsupported", func(t *testing.T, env *tddtest.Env) {
			problem(t, get(t, env, "/things?sort_order=random"), http.StatusBadRequest)
			problem(t, get(t, env, "/things?sort_by=lmos:vendor"), http.StatusBadRequest)
		}},
		{"tdd-things-list-pagination-order-nextlink", func(t *testing.T, env *tddtest.Env) {
			got := walk(t, env, "/things?limit=2&sort_by=title")
			if want := reversed(slices.Clone(sortedIDs)); !slices.Equal(got, want) {
				t.Errorf("pages by title, descending: %q, want %q", got, want)
			}
		}},
		{"tdd-things-list-pagination-order-utf-8", func(t *testing.T, env *tddtest.Env) {
			// U+1F600 sorts after U+FF46 by code point, before it in UTF-16;
			// "Z" before "a" (no case folding).
			got := ids(tdList(t, get(t, env, "/things?sort_by=title")))
			if want := reversed(slices.Clone(sortedIDs)); !slices.Equal(got, want) {
				t.Errorf("by title: %q, want %q", got, want)
			}
		}},
		{"tdd-things-list-pagination-collection", func(t *testing.T, env *tddtest.Env) {
			r := get(t, env, "/things?format=collection&limit=2&offset=1")
			var c struct {
				Context string            `json:"@context"`
				Type    string            `json:"@type"`
				ID      string            `json:"@id"`
				Total   int               `json:"total"`
				Next    string            `json:"next"`
				Members []json.RawMessage `json:"members"`
			}
			if err := json.Unmarshal(r.body, &c); err != nil || r.status != http.StatusOK {
				t.Fatalf("status %d, %s: %v", r.status, r.body, err)
			}
			next, _ := url.Parse(c.Next)
			if c.Context != tdd.DiscoveryContext || c.Type != "ThingCollection" || c.Total != 5 || len(c.Members) != 2 ||
				!strings.Contains(c.ID, "offset=1") || next.Query().Get("cursor") == "" || next.Query().Get("format") != "collection" {
				t.Errorf("collection %+v", c)
			}
			if _, err := lmosproto.VerifyDocument(c.Members[0]); err != nil {
				t.Errorf("member does not verify: %v", err)
			}
		}},

		// Retrieval and representation.
		{"tdd-things-retrieve", func(t *testing.T, env *tddtest.Env) {
			r := get(t, env, "/things/"+url.PathEscape("urn:é"))
			if td := tdOf(t, r); td.ID != "urn:é" {
				t.Errorf("retrieved %q", td.ID)
			}
		}},
		{"tdd-things-retrieve-resp", func(t *testing.T, env *tddtest.Env) {
			if r := get(t, env, "/things/urn:a"); r.status != http.StatusOK {
				t.Errorf("status %d", r.status)
			}
		}},
		{"tdd-things-retrieve-resp-content-type", func(t *testing.T, env *tddtest.Env) {
			for _, path := range []string{"/things/urn:a", "/things/urn:a?enriched=true"} {
				if ct := get(t, env, path).contentType(); ct != tdd.ContentTypeTD {
					t.Errorf("%s: content type %q", path, ct)
				}
			}
		}},
		{"tdd-things-default-representation", func(t *testing.T, env *tddtest.Env) {
			// JSON with JSON-LD syntax: every body is a JSON object or array
			// of objects with @context.
			for _, path := range []string{"/things/urn:a", "/things/urn:a?enriched=true", "/things?format=collection"} {
				var doc map[string]any
				if err := json.Unmarshal(get(t, env, path).body, &doc); err != nil || doc["@context"] == nil {
					t.Errorf("%s: not JSON-LD: %v", path, err)
				}
			}
			for _, doc := range tdList(t, get(t, env, "/things")) {
				if len(doc.Context) == 0 {
					t.Errorf("listed TD %q without @context", doc.ID)
				}
			}
		}},
		{"tdd-http-representation-alternate-output", func(t *testing.T, env *tddtest.Env) {
			// Accept picks among the equivalent JSON media types; the bytes
			// stay the signed TD's.
			plain := get(t, env, "/things/urn:a")
			for _, tc := range []struct{ path, accept, want string }{
				{"/things/urn:a", "application/ld+json", "application/ld+json"},
				{"/things/urn:a", "application/td+json;q=0.5, application/ld+json", "application/ld+json"},
				{"/things/urn:a", "text/html", tdd.ContentTypeTD},
				{"/things/urn:a", "*/*", tdd.ContentTypeTD},
				{"/things", "application/json;q=0.9, application/ld+json;q=0.1", "application/json"},
			} {
				r := do(t, http.MethodGet, env.URL+tc.path, nil, "Accept", tc.accept)
				if r.status != http.StatusOK || r.contentType() != tc.want || !strings.Contains(r.header.Get("Vary"), "Accept") {
					t.Errorf("%s, Accept %q: %d %q (Vary %q), want %s", tc.path, tc.accept, r.status, r.contentType(), r.header.Get("Vary"), tc.want)
				}
				if tc.path == "/things/urn:a" && string(r.body) != string(plain.body) {
					t.Errorf("Accept %q changed the bytes", tc.accept)
				}
			}
			if _, err := lmosproto.VerifyDocument(plain.body); err != nil {
				t.Errorf("default representation does not verify: %v", err)
			}
		}},

		// Registration information (the Enriched TD).
		{"tdd-context-injection", func(t *testing.T, env *tddtest.Env) {
			ctx, _ := enriched(t, env, "urn:a")["@context"].([]any)
			if !slices.Contains(ctx, any(tdd.DiscoveryContext)) || !slices.Contains(ctx, any("https://www.w3.org/2022/wot/td/v1.1")) {
				t.Errorf("@context %v", ctx)
			}
		}},
		{"tdd-absolute-time", func(t *testing.T, env *tddtest.Env) {
			reg := registration(t, env, "urn:Z")
			for _, k := range []string{"created", "modified", "expires", "retrieved"} {
				s, _ := reg[k].(string)
				if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") {
					t.Errorf("%s: %q is not an RFC 3339 date-time with offset", k, s)
				}
			}
		}},
		{"tdd-registrationinfo-vocab-created", func(t *testing.T, env *tddtest.Env) {
			if reg := registration(t, env, "urn:a"); reg["created"] != tddtest.Epoch.UTC().Format(time.RFC3339) {
				t.Errorf("created %v, want %s", reg["created"], tddtest.Epoch)
			}
		}},
		{"tdd-registrationinfo-vocab-modified", func(t *testing.T, env *tddtest.Env) {
			env.Clock.Advance(time.Hour)
			put(t, env, thing{id: "urn:a", title: "a again"})
			reg := registration(t, env, "urn:a")
			if want := tddtest.Epoch.Add(time.Hour).UTC().Format(time.RFC3339); reg["modified"] != want || reg["created"] == want {
				t.Errorf("registration %v after an update: want modified %s, created earlier", reg, want)
			}
		}},
		{"tdd-registrationinfo-vocab-expires", func(t *testing.T, env *tddtest.Env) {
			// A learned Thing expires; an own one does not.
			if reg := registration(t, env, "urn:Z"); reg["expires"] == nil {
				t.Errorf("learned thing: registration %v without expires", reg)
			}
			if reg := registration(t, env, "urn:a"); reg["expires"] != nil {
				t.Errorf("own thing: registration %v with expires", reg)
			}
		}},
		{"tdd-registrationinfo-vocab-ttl", func(t *testing.T, env *tddtest.Env) {
			reg := registration(t, env, "urn:Z")
			ttl, _ := reg["ttl"].(float64)
			created, _ := time.Parse(time.RFC3339, reg["modified"].(string))
			expires, _ := time.Parse(time.RFC3339, reg["expires"].(string))
			if ttl <= 0 || !created.Add(time.Duration(ttl)*time.Second).Equal(expires) {
				t.Errorf("registration %v: want expires = modified + ttl", reg)
			}
		}},
		{"tdd-registrationinfo-vocab-retrieved", func(t *testing.T, env *tddtest.Env) {
			before := time.Now().Add(-time.Second)
			s, _ := registration(t, env, "urn:a")["retrieved"].(string)
			if got, err := time.Parse(time.RFC3339, s); err != nil || got.Before(before.Truncate(time.Second)) || got.After(time.Now()) {
				t.Errorf("retrieved %q, want now", s)
			}
			// In the listing too.
			r := get(t, env, "/things?enriched=true&limit=1")
			var arr []map[string]any
			if err := json.Unmarshal(r.body, &arr); err != nil || len(arr) != 1 || arr[0]["registration"] == nil {
				t.Errorf("enriched listing %s: %v", r.body, err)
			}
		}},

		{"tdd-registrationinfo-expiry-purge", func(t *testing.T, env *tddtest.Env) {
			// A learned Thing past its expiry is purged (the directory's
			// purge loop calls Purge every Config.PurgeInterval); own Things
			// never expire.
			reg := registration(t, env, "urn:Z")
			expires, _ := time.Parse(time.RFC3339, reg["expires"].(string))
			env.Clock.Advance(expires.Sub(env.Clock.Now()) + time.Second)
			if n := env.Dir.Purge(env.Clock.Now()); n != 1 {
				t.Errorf("purged %d Things, want the learned one", n)
			}
			problem(t, get(t, env, "/things/urn:Z"), http.StatusNotFound)
			if got := walk(t, env, "/things"); slices.Contains(got, "urn:Z") || !slices.Contains(got, "urn:a") {
				t.Errorf("listing after the purge: %q", got)
			}
		}},
		{"tdd-things-crudl", func(t *testing.T, env *tddtest.Env) {
			// Create, read, update, delete and list, in one round.
			put(t, env, thing{id: "urn:crudl", title: "one"})
			if r := get(t, env, "/things/urn:crudl"); r.status != http.StatusOK || !strings.Contains(string(r.body), `"one"`) {
				t.Fatalf("read: %d %s", r.status, r.body)
			}
			put(t, env, thing{id: "urn:crudl", title: "two"})
			if r := get(t, env, "/things/urn:crudl"); !strings.Contains(string(r.body), `"two"`) {
				t.Fatalf("read after update: %s", r.body)
			}
			if !slices.Contains(walk(t, env, "/things"), "urn:crudl") {
				t.Fatal("list lacks the Thing")
			}
			if r := do(t, http.MethodDelete, env.URL+"/things/urn:crudl", nil); r.status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", r.status, r.body)
			}
			problem(t, get(t, env, "/things/urn:crudl"), http.StatusNotFound)
		}},
		{"tdd-things-read-only-auth", func(t *testing.T, env *tddtest.Env) {
			// Another publisher's Thing is read-only here: PATCH and DELETE
			// are refused, and a PUT of its id creates the node's own Thing
			// of that id, leaving the other publisher's untouched (Things
			// are identified by publisher and id). The API token guards the
			// node's own writes (node TestAPITokenRequired).
			other := tddtest.NewIdentity(3).ID.String()
			before := get(t, env, "/things/urn:Z?publisher="+other)
			if r := do(t, http.MethodPatch, env.URL+"/things/urn:Z", []byte(`{"title":"mine now"}`), "Content-Type", "application/merge-patch+json"); r.status != http.StatusForbidden {
				t.Errorf("PATCH of another publisher's Thing: %d %s, want 403", r.status, r.body)
			}
			if r := do(t, http.MethodDelete, env.URL+"/things/urn:Z", nil); r.status != http.StatusForbidden {
				t.Errorf("DELETE of another publisher's Thing: %d %s, want 403", r.status, r.body)
			}
			put(t, env, thing{id: "urn:Z", title: "mine"})
			if after := get(t, env, "/things/urn:Z?publisher="+other); after.status != http.StatusOK || string(after.body) != string(before.body) {
				t.Errorf("the other publisher's Thing changed: %d %s", after.status, after.body)
			}
		}},

		// Search.
		{"tdd-search-large-tdds", func(t *testing.T, env *tddtest.Env) {
			// Fragments instead of whole TDs: only the ids.
			if got := searchStrings(t, env, "$[*].id"); !slices.Equal(got, sortedIDs) {
				t.Errorf("$[*].id: %q, want %q", got, sortedIDs)
			}
		}},
		{"search-jsonpath", func(t *testing.T, env *tddtest.Env) {
			r := get(t, env, "/search/jsonpath?query="+url.QueryEscape("$[?@.title=='é']"))
			var tds []map[string]any
			if r.status != http.StatusOK || r.contentType() != "application/json" || json.Unmarshal(r.body, &tds) != nil || len(tds) != 1 || tds[0]["id"] != "urn:é" {
				t.Fatalf("filter: %d %s %s", r.status, r.contentType(), r.body)
			}
			if got := searchStrings(t, env, "$..[?@.scheme=='nosec'].scheme"); len(got) != 5 {
				t.Errorf("descendant filter: %q", got)
			}
			if got := searchStrings(t, env, "$[?match(@.title, '[a-z] .*')].id"); !slices.Equal(got, []string{"urn:\uFF46"}) {
				t.Errorf("function filter: %q", got)
			}
			// docs/api.md's example (no Thing here has capabilities).
			if got := searchStrings(t, env, "$[?match(@['lmos:capabilities'][0]['lmos:id'], 'weather.*')].id"); len(got) != 0 {
				t.Errorf("capability match: %q", got)
			}
			for _, q := range []string{"", "title", "$[?@.title==]", "$[", "$.a.b.c["} {
				problem(t, get(t, env, "/search/jsonpath?query="+url.QueryEscape(q)), http.StatusBadRequest)
			}
			problem(t, get(t, env, "/search/jsonpath"), http.StatusBadRequest)
		}},
		{"sec-tdd-limit-query-complexity", func(t *testing.T, env *tddtest.Env) {
			long := "$" + strings.Repeat(".title", 200)
			if p := problem(t, get(t, env, "/search/jsonpath?query="+url.QueryEscape(long)), http.StatusBadRequest); !strings.Contains(p.Detail, "limit") {
				t.Errorf("long query: %q", p.Detail)
			}
			deep := "$" + strings.Repeat("[?", 9) + "@.a" + strings.Repeat("]", 9)
			if p := problem(t, get(t, env, "/search/jsonpath?query="+url.QueryEscape(deep)), http.StatusBadRequest); !strings.Contains(p.Detail, "nested") {
				t.Errorf("deep query: %q", p.Detail)
			}
			// A query that multiplies nodes stops at Config.MaxSearchNodes.
			if p := problem(t, get(t, env, "/search/jsonpath?query="+url.QueryEscape("$..*..*")), http.StatusBadRequest); !strings.Contains(p.Detail, "nodes") {
				t.Errorf("exploding query: %q", p.Detail)
			}
			// Brackets inside strings do not count.
			if r := get(t, env, "/search/jsonpath?query="+url.QueryEscape("$[?@.title=='[[[[[[[[[[[[']")); r.status != http.StatusOK {
				t.Errorf("brackets in a string literal: %d %s", r.status, r.body)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.MaxSearchNodes = 100 })
			readsFleet(t, env)
			tc.run(t, env)
		})
	}
}

// TestConformanceQueryWatchdog: sec-tdd-query-watchdog, a search running
// longer than Config.SearchTimeout is aborted (503), one within it answers.
func TestConformanceQueryWatchdog(t *testing.T) {
	const q = "$..[?count(@..*) > 0]"
	env := tddtest.NewEnv(t, func(_ *tdd.Deps, c *tdd.Config) { c.SearchTimeout = time.Nanosecond })
	readsFleet(t, env)
	problem(t, get(t, env, "/search/jsonpath?query="+url.QueryEscape(q)), http.StatusServiceUnavailable)

	env = tddtest.NewEnv(t)
	readsFleet(t, env)
	if r := get(t, env, "/search/jsonpath?query="+url.QueryEscape(q)); r.status != http.StatusOK {
		t.Errorf("within the default timeout: %d %s", r.status, r.body)
	}
}

// TestConformanceReadsVisibility: a group-scoped Thing never reaches a
// caller outside the group, through listing, collection, search or events.
func TestConformanceReadsVisibility(t *testing.T) {
	env := tddtest.NewEnv(t, opsMembersOnly)
	readsFleet(t, env)
	outsider := openStream(t, env.URL+"/events?diff=true")
	member := openStream(t, env.URL+"/events?diff=true", "X-Test-Member", "g-ops")
	put(t, env, thing{id: "urn:secret", title: "secret", groups: []string{"g-ops"}})
	put(t, env, thing{id: "urn:public", title: "public"})
	if ev := outsider.next(t); !strings.Contains(ev.data, "urn:public") {
		t.Errorf("outsider's first event %+v, want urn:public's", ev)
	}
	if ev := member.next(t); !strings.Contains(ev.data, "urn:secret") {
		t.Errorf("member's first event %+v, want urn:secret's", ev)
	}
	for _, path := range []string{"/things", "/things?format=collection", "/things?enriched=true", "/search/jsonpath?query=" + url.QueryEscape("$[*].id")} {
		if r := get(t, env, path); strings.Contains(string(r.body), "urn:secret") {
			t.Errorf("%s shows the group's Thing to an outsider", path)
		}
		if r := do(t, http.MethodGet, env.URL+path, nil, "X-Test-Member", "g-ops"); !strings.Contains(string(r.body), "urn:secret") {
			t.Errorf("%s hides the group's Thing from a member", path)
		}
	}
	problem(t, get(t, env, "/things/urn:secret?enriched=true"), http.StatusNotFound)
}

// TestConformanceNotifications checks the Events API assertions.
func TestConformanceNotifications(t *testing.T) {
	env := tddtest.NewEnv(t)
	all := openStream(t, env.URL+"/events")
	diff := openStream(t, env.URL+"/events?diff=true")
	updates := openStream(t, env.URL+"/events/thing_updated")

	put(t, env, thing{id: "urn:n", title: "First", desc: "goes away", vendor: "V"})
	put(t, env, thing{id: "urn:n", title: "Second", vendor: "V"})
	updated := get(t, env, "/things/urn:n").body
	if r := do(t, http.MethodDelete, env.URL+"/things/urn:n", nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	var plain, diffs []sseEvent
	for range 3 {
		plain = append(plain, all.next(t))
		diffs = append(diffs, diff.next(t))
	}

	t.Run("tdd-notification-sse", func(t *testing.T) {
		if all.status != http.StatusOK {
			t.Errorf("status %d", all.status) // the content type is checked by openStream
		}
	})
	t.Run("tdd-notification-event-types", func(t *testing.T) {
		var got []string
		for _, ev := range plain {
			got = append(got, ev.event)
		}
		if want := []string{"thing_created", "thing_updated", "thing_deleted"}; !slices.Equal(got, want) {
			t.Errorf("types %v, want %v", got, want)
		}
	})
	t.Run("tdd-notification-event-id", func(t *testing.T) {
		if plain[0].id == "" || plain[0].id == plain[1].id {
			t.Fatalf("ids %q, %q", plain[0].id, plain[1].id)
		}
		// A reconnecting client gets what it missed.
		resumed := openStream(t, env.URL+"/events", "Last-Event-ID", plain[0].id)
		if ev := resumed.next(t); ev.id != plain[1].id || ev.event != "thing_updated" {
			t.Errorf("resumed with %+v, want event %s", ev, plain[1].id)
		}
	})
	t.Run("tdd-notification-filter-type", func(t *testing.T) {
		if ev := updates.next(t); ev.event != "thing_updated" {
			t.Errorf("filtered stream sent %+v", ev)
		}
		updates.none(t)
	})
	t.Run("tdd-notification-data", func(t *testing.T) {
		for _, ev := range append(plain, diffs...) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(ev.data), &obj); err != nil {
				t.Errorf("data %q is not a JSON object: %v", ev.data, err)
			}
		}
	})
	t.Run("tdd-notification-data-td-id", func(t *testing.T) {
		for _, ev := range append(plain, diffs...) {
			if ev.decode(t).ID != "urn:n" {
				t.Errorf("%s data %q without the id", ev.event, ev.data)
			}
		}
	})
	t.Run("tdd-notification-data-create-full", func(t *testing.T) {
		if _, err := lmosproto.VerifyDocument([]byte(diffs[0].data)); err != nil || !strings.Contains(diffs[0].data, `"First"`) {
			t.Errorf("thing_created with diff: %q (verify: %v), want the signed TD", diffs[0].data, err)
		}
	})
	t.Run("tdd-notification-data-update-diff", func(t *testing.T) {
		var patch map[string]any
		if err := json.Unmarshal([]byte(diffs[1].data), &patch); err != nil {
			t.Fatal(err)
		}
		if v, ok := patch["description"]; !ok || v != nil {
			t.Errorf("patch %v: want description null (removed)", patch)
		}
		if patch["title"] != "Second" || patch["securityDefinitions"] != nil || patch["lmos:metadata"] != nil {
			t.Errorf("patch %v: want title, not the unchanged members", patch)
		}
		// Applied to the created TD it gives the updated one.
		created := applyPatch(decodeMap(t, diffs[0].data), patch)
		if a, b := mustJSON(t, created), mustJSON(t, decodeMap(t, string(updated))); a != b {
			t.Errorf("patched %s\nwant     %s", a, b)
		}
	})
	t.Run("tdd-notification-data-update-id", func(t *testing.T) {
		if patch := decodeMap(t, diffs[1].data); patch["id"] != "urn:n" {
			t.Errorf("patch %v without id", patch)
		}
	})
	t.Run("tdd-notification-data-delete-diff", func(t *testing.T) {
		if d := decodeMap(t, diffs[2].data); len(d) != 2 || d["id"] != "urn:n" || d["publisher"] == nil {
			t.Errorf("thing_deleted with diff: %v, want only id and publisher", d)
		}
	})
	t.Run("tdd-notification", func(t *testing.T) {
		problem(t, get(t, env, "/events?diff=maybe"), http.StatusBadRequest)
		problem(t, get(t, env, "/events/thing_renamed"), http.StatusNotFound)
	})
}

// sortedIDs are readsFleet's ids in Unicode code point order.
var sortedIDs = []string{"urn:Z", "urn:a", "urn:é", "urn:\uFF46", "urn:\U0001F600"}

// readsFleet publishes four own Things and learns one, with ids and titles
// whose code point and UTF-16 orders differ, and whose titles order
// against their ids.
func readsFleet(t testing.TB, env *tddtest.Env) {
	t.Helper()
	for id, title := range map[string]string{"urn:\U0001F600": "Z \U0001F600", "urn:a": "\uFF46 a", "urn:é": "é", "urn:\uFF46": "a \uFF46"} {
		put(t, env, thing{id: id, title: title})
	}
	env.Learn(t, tddtest.NewIdentity(3), thing{id: "urn:Z", title: "\U0001F600 Z"}.td(t), 1)
}

func get(t *testing.T, env *tddtest.Env, path string) response {
	t.Helper()
	return do(t, http.MethodGet, env.URL+path, nil)
}

// getURL GETs an absolute URL (a next link).
func getURL(t *testing.T, u string) response {
	t.Helper()
	return do(t, http.MethodGet, u, nil)
}

func put(t testing.TB, env *tddtest.Env, s thing) {
	t.Helper()
	if r := do(t, http.MethodPut, env.URL+"/things/"+url.PathEscape(s.id), s.json(t)); r.status != http.StatusCreated && r.status != http.StatusNoContent {
		t.Fatalf("PUT %s: %d %s", s.id, r.status, r.body)
	}
}

// walk follows the next links from path and returns the ids of all pages.
func walk(t *testing.T, env *tddtest.Env, path string) []string {
	t.Helper()
	var all []string
	next := env.URL + path
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		r := do(t, http.MethodGet, next, nil)
		all = append(all, ids(tdList(t, r))...)
		next = nextLink(r)
	}
	return all
}

// canonical is the Link header with rel="canonical".
func canonical(t *testing.T, r response) string {
	t.Helper()
	for _, l := range r.header.Values("Link") {
		if strings.Contains(l, `rel="canonical"`) {
			return l
		}
	}
	t.Fatalf("no canonical link in %q", r.header.Values("Link"))
	return ""
}

func tdOf(t *testing.T, r response) *lmosproto.TD {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	td, err := lmosproto.ParseTD(r.body)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// enriched GETs the Enriched TD of id.
func enriched(t *testing.T, env *tddtest.Env, id string) map[string]any {
	t.Helper()
	r := get(t, env, "/things/"+url.PathEscape(id)+"?enriched=true")
	if r.status != http.StatusOK {
		t.Fatalf("enriched %s: %d %s", id, r.status, r.body)
	}
	return decodeMap(t, string(r.body))
}

func registration(t *testing.T, env *tddtest.Env, id string) map[string]any {
	t.Helper()
	reg, ok := enriched(t, env, id)["registration"].(map[string]any)
	if !ok {
		t.Fatalf("enriched %s without registration", id)
	}
	return reg
}

// searchStrings runs a JSONPath search whose nodes are strings.
func searchStrings(t *testing.T, env *tddtest.Env, q string) []string {
	t.Helper()
	r := get(t, env, "/search/jsonpath?query="+url.QueryEscape(q))
	var out []string
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil {
		t.Fatalf("search %s: %d %s", q, r.status, r.body)
	}
	return out
}

func decodeMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return m
}

func mustJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// applyPatch applies an RFC 7396 merge patch to doc.
func applyPatch(doc, patch map[string]any) map[string]any {
	for k, v := range patch {
		sub, isObj := v.(map[string]any)
		old, oldObj := doc[k].(map[string]any)
		switch {
		case v == nil:
			delete(doc, k)
		case isObj && oldObj:
			doc[k] = applyPatch(old, sub)
		default:
			doc[k] = v
		}
	}
	return doc
}

func reversed(s []string) []string {
	slices.Reverse(s)
	return s
}
