package tdd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// plainTD is an ordinary TD 1.1 document as WoT tooling writes it: the TD
// 1.1 context alone, no LMOS term. idMember is `"id":"…",` or "".
func plainTD(idMember, title string) []byte {
	return []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1",` + idMember +
		`"title":"` + title + `","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",` +
		`"properties":{"on":{"type":"boolean","forms":[{"href":"https://lamp.example/on"}]}}}`)
}

// lmosBound is the @context the node signs a plainTD with.
const lmosBound = `["https://www.w3.org/2022/wot/td/v1.1",{"lmos":"https://eclipse.dev/lmos/protocol/v1"}]`

// signedTD checks that r is a TD the node signed (200, application/td+json,
// a proof that verifies, signer the node) and returns it.
func signedTD(t *testing.T, env *tddtest.Env, r response) *lmosproto.TD {
	t.Helper()
	if r.status != http.StatusOK || r.contentType() != tdd.ContentTypeTD {
		t.Fatalf("GET: %d %q %s", r.status, r.contentType(), r.body)
	}
	signer, err := lmosproto.VerifyDocument(r.body)
	if err != nil {
		t.Fatalf("served TD does not verify: %v\n%s", err, r.body)
	}
	if signer.PeerID != env.Self.ID {
		t.Errorf("signed by %s, want the node %s", signer.PeerID, env.Self.ID)
	}
	if err := lmosproto.ValidateTD(r.body); err != nil {
		t.Errorf("served TD is not valid: %v", err)
	}
	td, err := lmosproto.ParseTD(r.body)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// rawProblem decodes a problem body as generic JSON, to see its members as
// written.
func rawProblem(t *testing.T, r response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	return m
}

// TestConformance drives the directory API's writes, validation, errors
// and HEAD through the real handler, one case per W3C WoT Discovery
// assertion ID (§7.3.2, "Directory Service API").
func TestConformance(t *testing.T) {
	td := tdd.ContentTypeTD
	for _, tc := range []struct {
		id string
		fn func(t *testing.T, env *tddtest.Env)
	}{
		{"tdd-things-crud", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			if r := do(t, http.MethodPut, u, plainTD(`"id":"urn:example:lamp",`, "Lamp"), "Content-Type", td); r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			if got := signedTD(t, env, do(t, http.MethodGet, u, nil)); got.Title != "Lamp" {
				t.Errorf("read: title %q", got.Title)
			}
			if r := do(t, http.MethodPut, u, plainTD(`"id":"urn:example:lamp",`, "Lamp 2"), "Content-Type", td); r.status != http.StatusNoContent {
				t.Fatalf("update: %d %s", r.status, r.body)
			}
			if r := do(t, http.MethodPatch, u, []byte(`{"description":"patched"}`), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent {
				t.Fatalf("partial update: %d %s", r.status, r.body)
			}
			if got := signedTD(t, env, do(t, http.MethodGet, u, nil)); got.Title != "Lamp 2" || got.Description != "patched" {
				t.Errorf("after updates: title %q description %q", got.Title, got.Description)
			}
			if r := do(t, http.MethodDelete, u, nil); r.status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", r.status, r.body)
			}
			problem(t, do(t, http.MethodGet, u, nil), http.StatusNotFound)
		}},
		{"tdd-things-create-known-vs-anonymous", func(t *testing.T, env *tddtest.Env) {
			// A TD with an id is created by PUT at its id; POST is for TDs
			// without one, and refuses a TD that has an id.
			if r := do(t, http.MethodPut, env.URL+"/things/urn:example:lamp", plainTD(`"id":"urn:example:lamp",`, "Lamp"), "Content-Type", td); r.status != http.StatusCreated {
				t.Fatalf("PUT: %d %s", r.status, r.body)
			}
			p := problem(t, do(t, http.MethodPost, env.URL+"/things", plainTD(`"id":"urn:example:other",`, "Other"), "Content-Type", td), http.StatusBadRequest)
			if len(p.ValidationErrors) != 1 || p.ValidationErrors[0].Field != "/id" {
				t.Errorf("POST with an id: %+v", p)
			}
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			if r.status != http.StatusCreated || !strings.Contains(r.header.Get("Location"), "/things/urn:uuid:") {
				t.Errorf("POST without id: %d, Location %q", r.status, r.header.Get("Location"))
			}
		}},
		{"tdd-things-create-known-td", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/" + url.PathEscape("urn:example:lamp")
			if r := do(t, http.MethodPut, u, plainTD(`"id":"urn:example:lamp",`, "Lamp"), "Content-Type", td); r.status != http.StatusCreated {
				t.Fatalf("PUT plain TD 1.1: %d %s", r.status, r.body)
			}
			got := signedTD(t, env, do(t, http.MethodGet, u, nil))
			if got.ID != "urn:example:lamp" || got.Seq != 1 || string(got.Context) != lmosBound {
				t.Errorf("stored id %q seq %d @context %s; want the id, seq 1 and %s", got.ID, got.Seq, got.Context, lmosBound)
			}
			// The path's id must be the TD's.
			p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:example:b", plainTD(`"id":"urn:example:lamp",`, "Lamp"), "Content-Type", td), http.StatusBadRequest)
			if len(p.ValidationErrors) != 1 || p.ValidationErrors[0].Field != "/id" {
				t.Errorf("id differs from path: %+v", p)
			}
		}},
		{"tdd-things-create-known-contenttype", func(t *testing.T, env *tddtest.Env) {
			if r := do(t, http.MethodPut, env.URL+"/things/urn:example:lamp", plainTD("", "Lamp"), "Content-Type", "application/td+json; charset=utf-8"); r.status != http.StatusCreated {
				t.Fatalf("PUT application/td+json: %d %s", r.status, r.body)
			}
			problem(t, do(t, http.MethodPut, env.URL+"/things/urn:example:b", plainTD("", "B"), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
		}},
		{"tdd-things-create-known-td-resp", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPut, env.URL+"/things/urn:example:lamp", plainTD(`"id":"urn:example:lamp",`, "Lamp"), "Content-Type", td)
			if r.status != http.StatusCreated || len(r.body) != 0 {
				t.Errorf("PUT new: %d %q, want 201 without a body", r.status, r.body)
			}
		}},
		{"tdd-things-create-anonymous-td", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			if r.status != http.StatusCreated {
				t.Fatalf("POST: %d %s", r.status, r.body)
			}
			if got := signedTD(t, env, do(t, http.MethodGet, r.header.Get("Location"), nil)); got.Title != "Anon" || string(got.Context) != lmosBound {
				t.Errorf("created: title %q @context %s", got.Title, got.Context)
			}
		}},
		{"tdd-things-create-anonymous-contenttype", func(t *testing.T, env *tddtest.Env) {
			if r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td); r.status != http.StatusCreated {
				t.Fatalf("POST application/td+json: %d %s", r.status, r.body)
			}
			problem(t, do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType)
		}},
		{"tdd-things-create-anonymous-id", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			loc := r.header.Get("Location")
			id, err := url.PathUnescape(strings.TrimPrefix(loc, env.URL+"/things/"))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := env.Dir.Get(env.Self.ID, id); !ok {
				t.Errorf("POST: %d, Location %q: no Thing %q in the directory", r.status, loc, id)
			}
		}},
		{"tdd-things-create-anonymous-td-resp", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			loc := r.header.Get("Location")
			if r.status != http.StatusCreated || !strings.HasPrefix(loc, env.URL+"/things/urn:uuid:") {
				t.Fatalf("POST: %d, Location %q", r.status, loc)
			}
			if got := do(t, http.MethodGet, loc, nil); got.status != http.StatusOK {
				t.Errorf("GET Location: %d %s", got.status, got.body)
			}
		}},
		{"tdd-anonymous-td-identifier", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			loc := r.header.Get("Location")
			got := signedTD(t, env, do(t, http.MethodGet, loc, nil))
			if env.URL+"/things/"+got.ID != loc {
				t.Errorf("retrieved TD has id %q, Location %q", got.ID, loc)
			}
			listed := tdList(t, do(t, http.MethodGet, env.URL+"/things", nil))
			if len(listed) != 1 || listed[0].ID != got.ID {
				t.Errorf("listing ids %v, want [%s]", ids(listed), got.ID)
			}
		}},
		{"tdd-anonymous-td-local-uuid", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", td)
			got := signedTD(t, env, do(t, http.MethodGet, r.header.Get("Location"), nil))
			u, err := uuid.Parse(strings.TrimPrefix(got.ID, "urn:uuid:"))
			if !strings.HasPrefix(got.ID, "urn:uuid:") || err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
				t.Errorf("id %q is not a urn:uuid of a version 4 UUID (%v)", got.ID, err)
			}
		}},
		{"tdd-things-update", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			// The new version replaces the old one whole: "properties" goes.
			repl := []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:example:lamp","title":"Lamp 2","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`)
			if r := do(t, http.MethodPut, u, repl, "Content-Type", td); r.status != http.StatusNoContent {
				t.Fatalf("PUT update: %d %s", r.status, r.body)
			}
			got := signedTD(t, env, do(t, http.MethodGet, u, nil))
			if got.Title != "Lamp 2" || got.Properties != nil || got.Seq != 2 {
				t.Errorf("after update: title %q properties %v seq %d", got.Title, got.Properties, got.Seq)
			}
		}},
		{"tdd-things-update-contenttype", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			if r := do(t, http.MethodPut, u, plainTD("", "Lamp 2"), "Content-Type", td); r.status != http.StatusNoContent {
				t.Fatalf("PUT application/td+json: %d %s", r.status, r.body)
			}
			problem(t, do(t, http.MethodPut, u, plainTD("", "Lamp 3"), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
		}},
		{"tdd-things-update-resp", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			if r := do(t, http.MethodPut, u, plainTD("", "Lamp 2"), "Content-Type", td); r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Errorf("PUT update: %d %q, want 204 without a body", r.status, r.body)
			}
		}},
		{"tdd-things-update-partial", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			if r := do(t, http.MethodPatch, u, []byte(`{"title":"Patched"}`), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent {
				t.Fatalf("PATCH: %d %s", r.status, r.body)
			}
			got := signedTD(t, env, do(t, http.MethodGet, u, nil))
			if got.Title != "Patched" || got.Properties["on"] == nil || got.Seq != 2 {
				t.Errorf("after PATCH: title %q properties %v seq %d", got.Title, got.Properties, got.Seq)
			}
			problem(t, do(t, http.MethodPatch, env.URL+"/things/urn:example:none", []byte(`{"title":"x"}`), "Content-Type", tdd.ContentTypeMergePatch), http.StatusNotFound)
		}},
		{"tdd-things-update-partial-mergepatch", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			// RFC 7396: null removes, objects merge recursively, other
			// values replace; the node's own lmos:seq and the old @context
			// binding are not the client's concern.
			patch := `{"@context":"https://www.w3.org/2022/wot/td/v1.1","description":"new","properties":{"on":{"readOnly":true},"level":{"type":"integer","forms":[{"href":"https://lamp.example/level"}]}}}`
			if r := do(t, http.MethodPatch, u, []byte(patch), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent {
				t.Fatalf("PATCH: %d %s", r.status, r.body)
			}
			if r := do(t, http.MethodPatch, u, []byte(`{"description":null}`), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent {
				t.Fatalf("PATCH null: %d %s", r.status, r.body)
			}
			got := signedTD(t, env, do(t, http.MethodGet, u, nil))
			on := got.Properties["on"]
			if got.Description != "" || on == nil || on.ReadOnly == nil || !*on.ReadOnly || len(on.Forms) != 1 || got.Properties["level"] == nil || string(got.Context) != lmosBound || got.Seq != 3 {
				t.Errorf("after PATCHes: description %q properties %v @context %s seq %d", got.Description, got.Properties, got.Context, got.Seq)
			}
		}},
		{"tdd-things-update-partial-contenttype", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			for _, ct := range []string{"application/json", td, ""} {
				problem(t, do(t, http.MethodPatch, u, []byte(`{"title":"x"}`), "Content-Type", ct), http.StatusUnsupportedMediaType)
			}
		}},
		{"tdd-things-update-partial-partialtd", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			p := problem(t, do(t, http.MethodPatch, u, []byte(`{"title":7}`), "Content-Type", tdd.ContentTypeMergePatch), http.StatusBadRequest)
			if len(p.ValidationErrors) == 0 || p.ValidationErrors[0].Field != "/title" {
				t.Errorf("PATCH breaking the TD: %+v", p)
			}
			problem(t, do(t, http.MethodPatch, u, []byte(`["title"]`), "Content-Type", tdd.ContentTypeMergePatch), http.StatusBadRequest)
			problem(t, do(t, http.MethodPatch, u, []byte(`{"id":"urn:example:other"}`), "Content-Type", tdd.ContentTypeMergePatch), http.StatusBadRequest)
			if got := signedTD(t, env, do(t, http.MethodGet, u, nil)); got.Title != "Lamp" || got.Seq != 1 {
				t.Errorf("a refused PATCH changed the Thing: title %q seq %d", got.Title, got.Seq)
			}
		}},
		{"tdd-things-update-partial-resp", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			if r := do(t, http.MethodPatch, u, []byte(`{"title":"x"}`), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Errorf("PATCH: %d %q, want 204 without a body", r.status, r.body)
			}
		}},
		{"tdd-things-delete", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			do(t, http.MethodDelete, u, nil)
			problem(t, do(t, http.MethodGet, u, nil), http.StatusNotFound)
			if e, ok := env.Dir.Latest(env.Self.ID, "urn:example:lamp"); !ok || !e.Tombstone {
				t.Errorf("after DELETE the directory holds %+v, want the signed tombstone", e)
			}
			problem(t, do(t, http.MethodDelete, u, nil), http.StatusNotFound)
		}},
		{"tdd-things-delete-resp", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:lamp"
			do(t, http.MethodPut, u, plainTD("", "Lamp"), "Content-Type", td)
			if r := do(t, http.MethodDelete, u, nil); r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Errorf("DELETE: %d %q, want 204 without a body", r.status, r.body)
			}
		}},
		{"tdd-things-representation-alternate-input", func(t *testing.T, env *tddtest.Env) {
			// JSON and JSON-LD are accepted besides application/td+json.
			for i, ct := range []string{"application/json", "application/ld+json"} {
				u := env.URL + "/things/urn:example:" + string(rune('a'+i))
				if r := do(t, http.MethodPut, u, plainTD("", "X"), "Content-Type", ct); r.status != http.StatusCreated {
					t.Errorf("PUT %s: %d %s", ct, r.status, r.body)
				}
			}
			if r := do(t, http.MethodPost, env.URL+"/things", plainTD("", "Anon"), "Content-Type", "application/ld+json"); r.status != http.StatusCreated {
				t.Errorf("POST application/ld+json: %d %s", r.status, r.body)
			}
		}},
		{"tdd-validation-syntactic", func(t *testing.T, env *tddtest.Env) {
			for _, body := range []string{`{"title":`, `[1,2]`, `{"title":"a","title":"b"}`} {
				problem(t, do(t, http.MethodPut, env.URL+"/things/urn:example:x", []byte(body), "Content-Type", td), http.StatusBadRequest)
			}
			if n := env.Dir.Len(); n != 0 {
				t.Errorf("%d Things stored from refused bodies", n)
			}
		}},
		{"tdd-validation-jsonschema", func(t *testing.T, env *tddtest.Env) {
			for name, tc := range map[string]struct {
				body  string
				field string
			}{
				// A missing member is named by its own pointer, as the W3C
				// suite wants ("/title"), not by its parent's ("").
				"TD 1.1 schema: no security": {`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"x","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}}}`, "/security"},
				"TD 1.1 schema: no title":    {`{"@context":"https://www.w3.org/2022/wot/td/v1.1","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`, "/title"},
				"TD 1.1 schema: bad href":    {strings.Replace(string(plainTD("", "x")), `"href":"https://lamp.example/on"`, `"href":7`, 1), "/properties/on/forms/0/href"},
				"LMOS rule: unbound prefix":  {strings.Replace(string(plainTD("", "x")), `"title"`, `"lmos:groups":["g"],"title"`, 1), "/lmos:groups"},
				"LMOS rule: bad capability":  {`{"@context":` + lmosBound + `,"title":"x","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc","lmos:capabilities":[{"lmos:version":"1"}]}`, "/lmos:capabilities/0/lmos:id"},
			} {
				p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:example:x", []byte(tc.body), "Content-Type", td), http.StatusBadRequest)
				found := false
				for _, fe := range p.ValidationErrors {
					found = found || fe.Field == tc.field
				}
				if !found {
					t.Errorf("%s: validation errors %+v, want one at %q", name, p.ValidationErrors, tc.field)
				}
			}
			if n := env.Dir.Len(); n != 0 {
				t.Errorf("%d Things stored from invalid TDs", n)
			}
		}},
		{"tdd-validation-jsonschema/enriched-td", func(t *testing.T, env *tddtest.Env) {
			// An Enriched TD written back (the Discovery context and a
			// registration member) is accepted; the registration is the
			// directory's and is not signed into the record.
			u := env.URL + "/things/urn:example:lamp"
			enriched := `{"@context":["https://www.w3.org/2022/wot/td/v1.1","https://www.w3.org/2022/wot/discovery"],"id":"urn:example:lamp","title":"Lamp",` +
				`"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc",` +
				`"registration":{"created":"2026-11-21T10:00:00Z","modified":"2026-11-21T10:00:00+01:00","retrieved":"2026-11-21T10:00:00Z"}}`
			if r := do(t, http.MethodPut, u, []byte(enriched), "Content-Type", td); r.status != http.StatusCreated {
				t.Fatalf("PUT enriched TD: %d %s", r.status, r.body)
			}
			got := signedTD(t, env, do(t, http.MethodGet, u, nil))
			if _, ok := got.Extra["registration"]; ok {
				t.Errorf("the signed record carries the client's registration: %s", got.Extra["registration"])
			}
			if r := do(t, http.MethodPatch, u, []byte(`{"registration":{"modified":"2026-11-21T10:00:00Z"},"title":"Lamp 2"}`), "Content-Type", tdd.ContentTypeMergePatch); r.status != http.StatusNoContent {
				t.Fatalf("PATCH with registration: %d %s", r.status, r.body)
			}
			p := problem(t, do(t, http.MethodPut, u, []byte(strings.Replace(enriched, `"registration":{`, `"registration":{"ttl":"long",`, 1)), "Content-Type", td), http.StatusBadRequest)
			if len(p.ValidationErrors) != 1 || p.ValidationErrors[0].Field != "/registration/ttl" {
				t.Errorf("registration with a bad ttl: %+v", p)
			}
		}},
		{"tdd-validation-result", func(t *testing.T, env *tddtest.Env) {
			body := strings.Replace(string(plainTD("", "x")), `"type":"boolean"`, `"type":"bool"`, 1)
			p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:example:x", []byte(body), "Content-Type", td), http.StatusBadRequest)
			if len(p.ValidationErrors) == 0 || !strings.HasPrefix(p.ValidationErrors[0].Field, "/properties/on") || p.ValidationErrors[0].Description == "" || !strings.Contains(p.Detail, "/properties/on") {
				t.Errorf("problem does not locate the error: %+v", p)
			}
		}},
		{"tdd-validation-response", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPost, env.URL+"/things", []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":7}`), "Content-Type", td)
			problem(t, r, http.StatusBadRequest)
			m := rawProblem(t, r)
			if m["title"] != "Bad Request" || m["status"] != float64(400) {
				t.Errorf("title %v status %v", m["title"], m["status"])
			}
			if typ, ok := m["type"]; ok {
				t.Errorf("type %v: no WoT-specific problem type exists; the spec omits it (about:blank)", typ)
			}
			ves, ok := m["validationErrors"].([]any)
			if !ok || len(ves) < 2 {
				t.Fatalf("validationErrors %v: want an array (no security, title a number)", m["validationErrors"])
			}
			for _, v := range ves {
				fe, ok := v.(map[string]any)
				_, hasField := fe["field"].(string)
				desc, hasDesc := fe["description"].(string)
				if !ok || !hasField || !hasDesc || desc == "" || len(fe) != 2 {
					t.Errorf("validation error %v: want exactly a string field and a description", v)
				}
			}
		}},
		{"tdd-validation-response-utf-8", func(t *testing.T, env *tddtest.Env) {
			// A non-ASCII and an invalid UTF-8 byte in what the problem quotes.
			body := append([]byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":"Lampe größer","id":"urn:x:`), 0xff)
			body = append(body, `","security":7}`...)
			for _, r := range []response{
				do(t, http.MethodPost, env.URL+"/things", body, "Content-Type", td),
				do(t, http.MethodPut, env.URL+"/things/urn:größe", []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":7}`), "Content-Type", td),
			} {
				problem(t, r, http.StatusBadRequest)
				if !utf8.Valid(r.body) {
					t.Errorf("problem body is not UTF-8: %q", r.body)
				}
				if _, params, _ := mimeParams(r); params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8") {
					t.Errorf("charset %q", params["charset"])
				}
			}
		}},
		{"tdd-http-error-response", func(t *testing.T, env *tddtest.Env) {
			u := env.URL + "/things/urn:example:none"
			for _, c := range []struct {
				method, url string
				body        []byte
				ct          string
				status      int
			}{
				{http.MethodGet, u, nil, "", http.StatusNotFound},
				{http.MethodDelete, u, nil, "", http.StatusNotFound},
				{http.MethodPatch, env.URL + "/things", []byte(`{}`), tdd.ContentTypeMergePatch, http.StatusMethodNotAllowed},
				{http.MethodPut, u, plainTD("", "x"), "text/plain", http.StatusUnsupportedMediaType},
				{http.MethodPut, u, []byte(`{`), td, http.StatusBadRequest},
				{http.MethodGet, env.URL + "/search/sparql", nil, "", http.StatusNotFound},
			} {
				hdr := []string{}
				if c.ct != "" {
					hdr = []string{"Content-Type", c.ct}
				}
				problem(t, do(t, c.method, c.url, c.body, hdr...), c.status)
			}
			// A 5xx too: a Publisher that fails.
			fail := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.Publisher = failingPublisher{errors.New("disk on fire")} })
			problem(t, do(t, http.MethodPut, fail.URL+"/things/urn:x", plainTD("", "x"), "Content-Type", td), http.StatusInternalServerError)
		}},
		{"tdd-http-error-response-utf-8", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodGet, env.URL+"/things/"+url.PathEscape("urn:größe:\xff"), nil)
			problem(t, r, http.StatusNotFound)
			if !utf8.Valid(r.body) {
				t.Errorf("problem body is not UTF-8: %q", r.body)
			}
		}},
		{"tdd-http-error-response-lang", func(t *testing.T, env *tddtest.Env) {
			// MAY: the details are in English, and say so.
			r := do(t, http.MethodGet, env.URL+"/things/urn:none", nil, "Accept-Language", "de, en;q=0.5")
			problem(t, r, http.StatusNotFound)
			if got := r.header.Get("Content-Language"); got != "en" {
				t.Errorf("Content-Language %q, want en", got)
			}
		}},
		{"tdd-http-head", func(t *testing.T, env *tddtest.Env) {
			do(t, http.MethodPut, env.URL+"/things/urn:example:lamp", plainTD("", "Lamp"), "Content-Type", td)
			for _, path := range []string{"/.well-known/wot", "/things", "/things?limit=1", "/things/urn:example:lamp", "/things/urn:none", "/api/v1/things"} {
				get := do(t, http.MethodGet, env.URL+path, nil)
				head := do(t, http.MethodHead, env.URL+path, nil)
				if head.status != get.status || len(head.body) != 0 {
					t.Errorf("HEAD %s: %d with %d body bytes; GET %d", path, head.status, len(head.body), get.status)
				}
				for _, k := range []string{"Content-Type", "Content-Length", "Link", tdd.HeaderRegistration} {
					if head.header.Get(k) != get.header.Get(k) {
						t.Errorf("HEAD %s: %s %q, GET has %q", path, k, head.header.Get(k), get.header.Get(k))
					}
				}
			}
			for _, path := range []string{"/events", "/events/thing_created"} {
				head := doTimeout(t, http.MethodHead, env.URL+path, 5*time.Second)
				if head.status != http.StatusOK || head.contentType() != tdd.ContentTypeEventStream || len(head.body) != 0 {
					t.Errorf("HEAD %s: %d %q %q", path, head.status, head.contentType(), head.body)
				}
			}
		}},
		{"tdd-http-unsupported-feature", func(t *testing.T, env *tddtest.Env) {
			r := do(t, http.MethodPatch, env.URL+"/things", []byte(`{}`), "Content-Type", tdd.ContentTypeMergePatch)
			problem(t, r, http.StatusMethodNotAllowed)
			if allow := r.header.Get("Allow"); allow != "GET, HEAD, POST" {
				t.Errorf("Allow %q", allow)
			}
			problem(t, do(t, http.MethodGet, env.URL+"/search/sparql?query=x", nil), http.StatusNotFound)
			// Expiring registrations (ttl, expires) are not offered for the
			// node's own Things: said, not ignored.
			for _, reg := range []string{`{"ttl":3600}`, `{"expires":"2030-01-01T00:00:00Z"}`} {
				body := strings.Replace(string(plainTD("", "x")), `"title"`, `"registration":`+reg+`,"title"`, 1)
				p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:x", []byte(body), "Content-Type", td), http.StatusNotImplemented)
				if len(p.ValidationErrors) != 1 || !strings.HasPrefix(p.ValidationErrors[0].Field, "/registration/") {
					t.Errorf("registration %s: %+v", reg, p)
				}
			}
			if n := env.Dir.Len(); n != 0 {
				t.Errorf("%d Things stored with an expiring registration", n)
			}
			ro := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.Publisher = nil })
			problem(t, do(t, http.MethodPut, ro.URL+"/things/urn:x", plainTD("", "x"), "Content-Type", td), http.StatusNotImplemented)
		}},
		{"tdd-absolute-time", func(t *testing.T, env *tddtest.Env) {
			do(t, http.MethodPut, env.URL+"/things/urn:example:lamp", plainTD("", "Lamp"), "Content-Type", td)
			r := do(t, http.MethodGet, env.URL+"/things/urn:example:lamp", nil)
			times := regexp.MustCompile(`(created|modified|expires)="([^"]*)"`).FindAllStringSubmatch(r.header.Get(tdd.HeaderRegistration), -1)
			got := signedTD(t, env, r)
			var proof struct {
				Created string `json:"created"`
			}
			if err := json.Unmarshal(got.Proof, &proof); err != nil {
				t.Fatal(err)
			}
			times = append(times, []string{"", "proof created", proof.Created})
			if len(times) < 3 {
				t.Fatalf("registration %q: want created and modified", r.header.Get(tdd.HeaderRegistration))
			}
			// A client's registration times must be RFC 3339 date-times,
			// time zone offset included.
			for _, when := range []string{"2030-01-01T00:00:00", "2030-01-01", "tomorrow"} {
				body := strings.Replace(string(plainTD("", "x")), `"title"`, `"registration":{"modified":"`+when+`"},"title"`, 1)
				p := problem(t, do(t, http.MethodPut, env.URL+"/things/urn:x", []byte(body), "Content-Type", td), http.StatusBadRequest)
				if len(p.ValidationErrors) != 1 || p.ValidationErrors[0].Field != "/registration/modified" {
					t.Errorf("registration modified %q: %+v", when, p)
				}
			}
			rfc3339 := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
			for _, m := range times {
				if _, err := time.Parse(time.RFC3339, m[2]); err != nil || !rfc3339.MatchString(m[2]) {
					t.Errorf("%s %q is not an RFC 3339 date-time with offset", m[1], m[2])
				}
			}
		}},
	} {
		t.Run(tc.id, func(t *testing.T) { tc.fn(t, tddtest.NewEnv(t)) })
	}
}

// mimeParams returns the media type and parameters of r's Content-Type.
func mimeParams(r response) (string, map[string]string, error) {
	return mime.ParseMediaType(r.header.Get("Content-Type"))
}

// doTimeout sends a bodiless request that must be answered within d, for
// endpoints that could stream forever.
func doTimeout(t *testing.T, method, u string, d time.Duration) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, u, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
