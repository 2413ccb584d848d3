package httpapi_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// dump is the response as a client sees it: status line, headers
// (sorted), blank line, body.
func dump(resp *http.Response, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", resp.Proto, resp.Status)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes()
}

// The problem responses of the node's HTTP surfaces, byte for byte, in
// testdata/problem-*.http: each case is what a surface writes in that
// situation.
func TestProblemGolden(t *testing.T) {
	cases := []struct {
		name, method, path string
		handler            http.HandlerFunc
	}{
		{"400-validation-errors", http.MethodPut, "/things/urn:ex:lamp", func(w http.ResponseWriter, r *http.Request) {
			// The directory API refusing an invalid TD.
			httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest,
				Detail: `thing "urn:ex:lamp" is not a valid Thing Description: 2 problem(s) at /title, /properties/on/type`,
				ValidationErrors: []lmosproto.FieldError{
					{Field: "/title", Description: "missing property 'title'"},
					{Field: "/properties/on/type", Description: "value must be one of 'boolean', 'integer', 'number', 'string', 'object', 'array', 'null'"},
				}})
		}},
		{"300-candidates", http.MethodGet, "/things/urn:ex:lamp/properties/on", func(w http.ResponseWriter, r *http.Request) {
			// The binding and the directory API on an id two peers publish.
			p := httpapi.Problemf(http.StatusMultipleChoices, "Thing %q is published by %d peers and none is this node; choose one with ?publisher=", "urn:ex:lamp", 2)
			for _, pub := range []string{"12D3KooWA", "12D3KooWB"} {
				p.Candidates = append(p.Candidates, lmosproto.Candidate{Publisher: pub, Title: "Lamp",
					Href: r.URL.Path + "?publisher=" + pub, Modified: "2025-01-02T03:04:05Z"})
			}
			httpapi.WriteProblem(w, r, p)
		}},
		{"403-forbidden", http.MethodPost, "/things/urn:ex:lamp/actions/toggle", func(w http.ResponseWriter, r *http.Request) {
			// A call of a Thing restricted to groups this node is not in.
			httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusForbidden, Title: "Forbidden",
				Detail: `Thing "urn:ex:lamp" of 12D3KooWA is restricted to the groups g1, and this node may not call it`})
		}},
		{"404-not-found", http.MethodGet, "/things/urn:ex:nothing", func(w http.ResponseWriter, r *http.Request) {
			httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusNotFound, Detail: `no thing "urn:ex:nothing"`})
		}},
		{"405-method-not-allowed", http.MethodPost, "/api/v1/node", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "GET")
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusMethodNotAllowed, "method %s not allowed; allowed: %s", r.Method, "GET"))
		}},
		{"401-from-a-thing", http.MethodGet, "/things/urn:ex:safe/properties/code", func(w http.ResponseWriter, r *http.Request) {
			// A Thing's own problem, relayed as an LMOS error message: its
			// title and instance stay, the blank type is left out.
			m := lmosproto.NewError(lmosproto.NewMessage("urn:ex:safe", lmosproto.MsgReadProperty), http.StatusUnauthorized, "Unauthorized", "no key")
			m.Instance = "urn:uuid:00000000-0000-4000-8000-000000000000"
			httpapi.WriteProblem(w, r, m.Problem())
		}},
		{"500-error", http.MethodDelete, "/things/urn:ex:lamp", func(w http.ResponseWriter, r *http.Request) {
			// Any error that is not a problem.
			httpapi.WriteProblem(w, r, fmt.Errorf("remove thing %q: %w", "urn:ex:lamp", errors.New("disk full")))
		}},
		{"500-panic", http.MethodGet, "/api/v1/node", func(w http.ResponseWriter, r *http.Request) {
			httpapi.Recover(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				panic("nil map")
			})).ServeHTTP(w, r)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.handler(rec, httptest.NewRequest(tc.method, tc.path, nil))
			got := dump(rec.Result(), rec.Body.Bytes())
			file := filepath.Join("testdata", "problem-"+tc.name+".http")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("response differs from %s:\n--- got\n%s\n--- want\n%s", file, got, want)
			}
		})
	}
}

// WriteProblem leaves the caller's problem as it was, and a status that
// is no status code answers 500.
func TestWriteProblemKeepsProblem(t *testing.T) {
	p := &lmosproto.Problem{Status: http.StatusConflict, Type: lmosproto.ProblemTypeBlank}
	rec := httptest.NewRecorder()
	httpapi.WriteProblem(rec, httptest.NewRequest(http.MethodGet, "/x", nil), fmt.Errorf("wrapped: %w", p))
	if rec.Code != http.StatusConflict || p.Title != "" || p.Instance != "" || p.Type != lmosproto.ProblemTypeBlank {
		t.Errorf("code %d, problem after writing %+v", rec.Code, p)
	}
	rec = httptest.NewRecorder()
	httpapi.WriteProblem(rec, httptest.NewRequest(http.MethodGet, "/x", nil), &lmosproto.Problem{Title: "Odd"})
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"title":"Odd","status":500`) {
		t.Errorf("status 0: %d %s", rec.Code, rec.Body)
	}
}

// Recover lets http.ErrAbortHandler through: net/http aborts the response
// with it on purpose.
func TestRecoverAbort(t *testing.T) {
	h := httpapi.Recover(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler { //nolint:errorlint // the very value
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
}

// ResponseProblem reads a problem body, and falls back to the status
// (and the first line of a plain text body) without one.
func TestResponseProblem(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		want                    lmosproto.Problem
		err                     bool
	}{
		{"problem", lmosproto.ContentTypeProblemJSON + "; charset=utf-8", `{"title":"Not Found","status":404,"detail":"no thing","validationErrors":[{"field":"/id","description":"x"}]}`,
			lmosproto.Problem{Title: "Not Found", Status: 404, Detail: "no thing", ValidationErrors: []lmosproto.FieldError{{Field: "/id", Description: "x"}}}, false},
		{"plain text", "text/plain; charset=utf-8", "nope\nmore", lmosproto.Problem{Title: "Not Found", Status: 404, Detail: "nope"}, false},
		{"html", "text/html", "<p>nope</p>", lmosproto.Problem{Title: "Not Found", Status: 404}, false},
		{"broken problem", lmosproto.ContentTypeProblemJSON, "{", lmosproto.Problem{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 404, Status: "404 Not Found", Header: http.Header{"Content-Type": {tc.contentType}}}
			p, err := httpapi.ResponseProblem(resp, []byte(tc.body))
			if tc.err {
				if err == nil {
					t.Errorf("no error, problem %+v", p)
				}
				return
			}
			if err != nil || p.Error() != tc.want.Error() || len(p.ValidationErrors) != len(tc.want.ValidationErrors) {
				t.Errorf("ResponseProblem = %+v, %v; want %+v", p, err, tc.want)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusCreated, map[string]string{"a": "<b>"})
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != `{"a":"\u003cb\u003e"}`+"\n" {
		t.Errorf("%d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	rec = httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusOK, func() {})
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Type") != lmosproto.ContentTypeProblemJSON {
		t.Errorf("unencodable: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}
