package tdd_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// FuzzReadQueries sends arbitrary query values to the read endpoints: a
// JSONPath query, listing parameters and Accept. The answer is 200, or a
// 4xx problem (503 for the search watchdog), never another 5xx.
func FuzzReadQueries(f *testing.F) {
	f.Add("$[*].id", "title", "desc", "collection", "application/ld+json")
	f.Add("$..[?@.scheme=='nosec']", "/registration/created", "asc", "array", "*/*")
	f.Add("$[?match(@.title, '[')]", "x", "up", "xml", "text/html;q=0")
	f.Add("$[?(((((((((@)))))))))]", "", "", "", "")
	env := tddtest.NewEnv(f)
	readsFleet(f, env)
	f.Fuzz(func(t *testing.T, jsonpath, sortBy, sortOrder, format, accept string) {
		if strings.IndexFunc(accept, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			accept = "" // not a header value the client can send
		}
		for _, path := range []string{
			"/search/jsonpath?query=" + url.QueryEscape(jsonpath),
			"/things?" + url.Values{"sort_by": {sortBy}, "sort_order": {sortOrder}, "format": {format}, "enriched": {"true"}}.Encode(),
			"/things/urn:a?enriched=true",
		} {
			r := do(t, http.MethodGet, env.URL+path, nil, "Accept", accept)
			if r.status >= 500 && r.status != http.StatusServiceUnavailable {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
			if r.status >= 400 && r.contentType() != tdd.ContentTypeProblem {
				t.Fatalf("%s: %d without a problem body", path, r.status)
			}
		}
	})
}
