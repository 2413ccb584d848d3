package tdd_test

import (
	"net/http"
	"testing"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
)

// FuzzWrites sends arbitrary bodies to every write endpoint: the answer is
// never a 5xx, and an error is always a problem body.
func FuzzWrites(f *testing.F) {
	f.Add([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"x","security":"s","securityDefinitions":{"s":{"scheme":"nosec"}}}`))
	f.Add([]byte(`{"td":{"title":"x"},"backend":"http://h"}`))
	f.Add([]byte(`{"title":null,"id":"urn:f"}`))
	f.Add([]byte(`{"addr":"/ip4/127.0.0.1/tcp/1"}`))
	f.Add([]byte(`[`))
	env := tddtest.NewEnv(f)
	do(f, http.MethodPut, env.URL+"/things/urn:f", thing{id: "urn:f", title: "F"}.json(f))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, rq := range []struct{ method, path, ct string }{
			{http.MethodPut, "/things/urn:f", tdd.ContentTypeTD},
			{http.MethodPost, "/things", tdd.ContentTypeTD},
			{http.MethodPatch, "/things/urn:f", tdd.ContentTypeMergePatch},
			{http.MethodPost, "/api/v1/things", tdd.ContentTypeJSON},
			{http.MethodPost, "/api/v1/connect", tdd.ContentTypeJSON},
		} {
			r := do(t, rq.method, env.URL+rq.path, body, "Content-Type", rq.ct)
			if r.status >= 500 && r.status != http.StatusNotImplemented {
				t.Fatalf("%s %s with %q: %d %s", rq.method, rq.path, body, r.status, r.body)
			}
			if r.status >= 400 && r.contentType() != tdd.ContentTypeProblem {
				t.Fatalf("%s %s: %d without a problem body", rq.method, rq.path, r.status)
			}
		}
	})
}
