package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestReadBodyJSONText: ReadBody refuses JSON text that encoding/json
// would rewrite to U+FFFD (400, naming the member) and JSON in another
// charset than UTF-8 (415), by the body's Content-Type; other bodies pass
// as they are.
func TestReadBodyJSONText(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		status         int
		field          string
	}{
		{"invalid UTF-8 value", "application/json", "{\"name\":\"\xff\"}", 400, "/name"},
		{"invalid UTF-8 name", "application/json", "{\"a\":{\"n\xc3\":1}}", 400, "/a/n\ufffd"},
		{"lone surrogate in array", "application/td+json", `{"a":[1,"x",{"b/c":"\ud800"}]}`, 400, "/a/2/b~1c"},
		{"low surrogate alone", "application/merge-patch+json; charset=utf-8", `["\udfff"]`, 400, "/0"},
		{"not JSON, invalid UTF-8", "application/json", "\xff\xfe", 400, ""},
		{"ndjson", "application/x-ndjson", "{\"a\":\"\xff\"}\n", 400, "/a"},
		{"utf-16", "application/td+json; charset=utf-16", `{}`, 415, ""},
		{"latin1", "application/json; charset=ISO-8859-1", `{}`, 415, ""},
		{"UTF-8 upper case", "application/json; charset=UTF-8", `{"name":"größe \ud83d\ude00"}`, 200, ""},
		{"CBOR is not JSON", "application/cbor", "\x61\xff", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ct)
			w := httptest.NewRecorder()
			b, p := httpapi.ReadBody(w, r, 1<<10)
			if tc.status == 200 {
				if p != nil || string(b) != tc.body {
					t.Fatalf("got %q, %+v; want the body as sent", b, p)
				}
				return
			}
			if p == nil || p.Status != tc.status {
				t.Fatalf("problem %+v, want status %d", p, tc.status)
			}
			if tc.status == 400 && (len(p.ValidationErrors) != 1 || p.ValidationErrors[0].Field != tc.field) {
				t.Errorf("validationErrors %+v, want the field %q", p.ValidationErrors, tc.field)
			}
			httpapi.WriteProblem(w, r, p)
			var got lmosproto.Problem
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Header().Get("Content-Type") != lmosproto.ContentTypeProblemJSON {
				t.Errorf("not a problem: %q %v", w.Body, err)
			}
		})
	}
}

// TestAsProblems: an http.Error answer becomes a problem with its status,
// headers and first line; other answers pass as they are.
func TestAsProblems(t *testing.T) {
	h := httpapi.AsProblems(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "no upgrade\nsecond line", http.StatusUpgradeRequired)
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ws", nil))
	var p lmosproto.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != http.StatusUpgradeRequired ||
		w.Header().Get("Content-Type") != lmosproto.ContentTypeProblemJSON || w.Header().Get("Upgrade") != "websocket" ||
		p.Detail != "no upgrade" || p.Instance != "/ws" {
		t.Errorf("%d %v %q: %v", w.Code, w.Header(), w.Body, err)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ok", nil))
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("304 changed: %d %q", w.Code, w.Body)
	}
}
