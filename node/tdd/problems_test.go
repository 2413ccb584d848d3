package tdd_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// timestamp matches the RFC 3339 times of a response, which vary from run
// to run.
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// The directory API's problem responses as a client sees them, in
// testdata/problem-*.http: status line, the headers that describe the
// problem, body (the test server's URL and the times replaced).
func TestProblemResponsesGolden(t *testing.T) {
	env := tddtest.NewEnv(t)
	a, b := tddtest.NewIdentity(2), tddtest.NewIdentity(3)
	env.Learn(t, a, thing{id: "urn:dup", title: "A"}.td(t), 1)
	env.Learn(t, b, thing{id: "urn:dup", title: "B"}.td(t), 1)
	valid := thing{id: "urn:x", title: "X"}.json(t)
	badTitle := bytes.Replace(valid, []byte(`"title":"X"`), []byte(`"title":7`), 1)

	for _, tc := range []struct {
		name, method, path string
		body               []byte
	}{
		{"400-validation-errors", http.MethodPut, "/things/urn:x", badTitle},
		{"300-candidates", http.MethodGet, "/things/urn:dup", nil},
		{"403-other-publisher", http.MethodPut, "/things/urn:dup?publisher=" + a.ID.String(), valid},
		{"404-no-thing", http.MethodGet, "/things/urn:none", nil},
		{"405-method", http.MethodPost, "/things/urn:x", valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, env.URL+tc.path, tc.body)
			var got bytes.Buffer
			fmt.Fprintf(&got, "HTTP/1.1 %d %s\n", r.status, http.StatusText(r.status))
			for _, k := range []string{"Allow", "Cache-Control", "Content-Language", "Content-Type", "X-Content-Type-Options"} {
				if v := r.header.Get(k); v != "" {
					fmt.Fprintf(&got, "%s: %s\n", k, v)
				}
			}
			got.WriteString("\n")
			body := strings.ReplaceAll(string(r.body), env.URL, "http://127.0.0.1:5080")
			got.WriteString(timestamp.ReplaceAllString(body, "2026-01-02T03:04:05Z"))

			file := filepath.Join("testdata", "problem-"+tc.name+".http")
			if *update {
				if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s %s differs from %s (go test -update rewrites it):\n%s", tc.method, tc.path, file, got.Bytes())
			}
		})
	}
}
