package tdd_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWellKnownGolden(t *testing.T) {
	env := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.BaseURL = "http://127.0.0.1:5080" })
	r := do(t, http.MethodGet, env.URL+"/.well-known/wot", nil)
	if r.status != http.StatusOK || r.contentType() != tdd.ContentTypeTD {
		t.Fatalf("status %d, content type %q: %s", r.status, r.contentType(), r.body)
	}
	if err := lmosproto.ValidateTD(r.body); err != nil {
		t.Fatalf("directory TD is not valid: %v", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, r.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "wellknown.golden.json")
	if *update {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("GET /.well-known/wot differs from %s (go test -update rewrites it):\n%s", golden, pretty.Bytes())
	}
	// It carries a strong ETag and Cache-Control: no-cache; the ETag
	// gets 304.
	etag := r.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("ETag %q, Cache-Control %q; want a strong ETag and no-cache", etag, r.header.Get("Cache-Control"))
	}
	if r := do(t, http.MethodGet, env.URL+"/.well-known/wot", nil, "If-None-Match", etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match %s: %d with %d bytes, want 304", etag, r.status, len(r.body))
	}
	// Without BaseURL the base is the request's host.
	env2 := tddtest.NewEnv(t)
	td, err := lmosproto.ParseTD(do(t, http.MethodGet, env2.URL+"/.well-known/wot", nil).body)
	if err != nil {
		t.Fatal(err)
	}
	if base := string(td.Extra["base"]); base != `"`+env2.URL+`"` {
		t.Errorf("base %s, want %q", base, env2.URL)
	}
}

func TestThingLifecycle(t *testing.T) {
	env := tddtest.NewEnv(t)
	id := "urn:uuid:11111111-1111-4111-8111-111111111111"
	thingURL := env.URL + "/things/" + url.PathEscape(id)
	doc := thing{id: id, title: "Weather", caps: []string{"weather@1.0.0"}}.json(t)

	r := do(t, http.MethodPut, thingURL, doc, "Content-Type", tdd.ContentTypeTD)
	if r.status != http.StatusCreated {
		t.Fatalf("PUT new: %d %s", r.status, r.body)
	}
	if loc := r.header.Get("Location"); loc != thingURL {
		t.Errorf("Location %q, want %q", loc, thingURL)
	}

	r = do(t, http.MethodGet, thingURL, nil)
	if r.status != http.StatusOK || r.contentType() != tdd.ContentTypeTD {
		t.Fatalf("GET: %d %q %s", r.status, r.contentType(), r.body)
	}
	signer, err := lmosproto.VerifyDocument(r.body)
	if err != nil {
		t.Fatalf("served TD does not verify: %v", err)
	}
	if signer.PeerID != env.Self.ID {
		t.Errorf("signed by %s, want the node %s", signer.PeerID, env.Self.ID)
	}
	td, _ := lmosproto.ParseTD(r.body)
	if td.Seq != 1 || td.Title != "Weather" {
		t.Errorf("served seq %d title %q", td.Seq, td.Title)
	}
	wantReg := `created="2026-11-21T10:00:00Z", modified="2026-11-21T10:00:00Z", online`
	if got := r.header.Get(tdd.HeaderRegistration); got != wantReg {
		t.Errorf("%s: %q, want %q", tdd.HeaderRegistration, got, wantReg)
	}
	if got := r.header.Get(tdd.HeaderPublisher); got != env.Self.ID.String() {
		t.Errorf("%s: %q", tdd.HeaderPublisher, got)
	}
	if got := r.header.Get("Last-Modified"); got != tddtest.Epoch.Format(http.TimeFormat) {
		t.Errorf("Last-Modified %q", got)
	}

	head := do(t, http.MethodHead, thingURL, nil)
	if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("Content-Length") != r.header.Get("Content-Length") {
		t.Errorf("HEAD: %d, %d body bytes, length %q", head.status, len(head.body), head.header.Get("Content-Length"))
	}

	env.Clock.Advance(time.Minute)
	doc2 := thing{id: id, title: "Weather 2"}.json(t)
	if r := do(t, http.MethodPut, thingURL, doc2, "Content-Type", "application/json"); r.status != http.StatusNoContent {
		t.Fatalf("PUT update: %d %s", r.status, r.body)
	}
	r = do(t, http.MethodGet, thingURL, nil)
	td, _ = lmosproto.ParseTD(r.body)
	if td.Seq != 2 || td.Title != "Weather 2" {
		t.Errorf("after update: seq %d title %q", td.Seq, td.Title)
	}
	if got := r.header.Get(tdd.HeaderRegistration); got != `created="2026-11-21T10:00:00Z", modified="2026-11-21T10:01:00Z", online` {
		t.Errorf("registration after update: %q", got)
	}

	if r := do(t, http.MethodDelete, thingURL, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	problem(t, do(t, http.MethodGet, thingURL, nil), http.StatusNotFound)
	problem(t, do(t, http.MethodDelete, thingURL, nil), http.StatusNotFound)
	// The tombstone is signed and held.
	if e, ok := env.Dir.Latest(env.Self.ID, id); !ok || !e.Tombstone || e.Seq != 3 {
		t.Errorf("after DELETE the directory holds %+v, want a tombstone at seq 3", e)
	}
	// Created again after its removal: 201.
	if r := do(t, http.MethodPut, thingURL, doc, "Content-Type", tdd.ContentTypeTD); r.status != http.StatusCreated {
		t.Errorf("PUT after DELETE: %d %s", r.status, r.body)
	}
}

func TestPutTakesIDFromPath(t *testing.T) {
	env := tddtest.NewEnv(t)
	doc := thing{title: "No id"}.json(t)
	r := do(t, http.MethodPut, env.URL+"/things/urn:example:a", doc)
	if r.status != http.StatusCreated {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if _, ok := env.Dir.Get(env.Self.ID, "urn:example:a"); !ok {
		t.Error("thing not published under the path's id")
	}
	// An id with slashes, percent-encoded in the path.
	id := "https://things.example/a/b"
	r = do(t, http.MethodPut, env.URL+"/things/"+url.PathEscape(id), doc)
	if r.status != http.StatusCreated {
		t.Fatalf("PUT %s: %d %s", id, r.status, r.body)
	}
	if r := do(t, http.MethodGet, env.URL+"/things/"+url.PathEscape(id), nil); r.status != http.StatusOK {
		t.Errorf("GET %s: %d %s", id, r.status, r.body)
	}
}

func TestCreateAnonymous(t *testing.T) {
	env := tddtest.NewEnv(t)
	r := do(t, http.MethodPost, env.URL+"/things", thing{title: "Anon"}.json(t), "Content-Type", tdd.ContentTypeTD)
	if r.status != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	loc := r.header.Get("Location")
	prefix := env.URL + "/things/urn:uuid:"
	if !strings.HasPrefix(loc, prefix) || len(loc) != len(prefix)+36 {
		t.Fatalf("Location %q, want %s<uuid>", loc, prefix)
	}
	got := do(t, http.MethodGet, loc, nil)
	td, err := lmosproto.ParseTD(got.body)
	if err != nil || got.status != http.StatusOK || td.Title != "Anon" || "urn:uuid:"+strings.TrimPrefix(loc, prefix) != td.ID {
		t.Errorf("GET Location: %d %s", got.status, got.body)
	}

	p := problem(t, do(t, http.MethodPost, env.URL+"/things", thing{id: "urn:x", title: "Named"}.json(t)), http.StatusBadRequest)
	if !slices.Equal(fields(p), []string{"/id"}) {
		t.Errorf("POST with id: fields %v, want [/id]", fields(p))
	}
}

func TestInvalidRequests(t *testing.T) {
	env := tddtest.NewEnv(t)
	valid := thing{id: "urn:x", title: "X"}.json(t)
	badTitle := bytes.Replace(valid, []byte(`"title":"X"`), []byte(`"title":7`), 1)
	badCap := thing{id: "urn:x", title: "X"}.doc()
	badCap["lmos:capabilities"] = []any{map[string]any{"lmos:id": "c", "lmos:version": "one"}}
	badCapDoc, _ := json.Marshal(badCap)
	big := bytes.Repeat([]byte(" "), lmosproto.MaxTDSize+1)
	withDesc := func(desc string) []byte { // valid with its description replaced by raw JSON text
		return bytes.Replace(valid, []byte(`"title":"X"`), []byte(`"title":"X","description":`+desc), 1)
	}
	hugeNumber := withDesc(`"d","lmos:metadata":{"size":1e400}`)
	longID := "urn:" + strings.Repeat("x", lmosproto.MaxIDLength)
	longIDDoc := bytes.Replace(valid, []byte(`"urn:x"`), []byte(`"`+longID+`"`), 1)

	tests := []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             int
		fields             []string // validation error fields, if any
		detail             string   // substring of the detail
	}{
		{"title not a string", "PUT", "/things/urn:x", badTitle, nil, 400, []string{"/title"}, "not a valid Thing Description"},
		{"capability version", "PUT", "/things/urn:x", badCapDoc, nil, 400, []string{"/lmos:capabilities/0/lmos:version"}, ""},
		{"not JSON", "PUT", "/things/urn:x", []byte("{"), nil, 400, []string{""}, ""},
		{"id differs from path", "PUT", "/things/urn:y", valid, nil, 400, []string{"/id"}, `"urn:x" differs`},
		{"wrong content type", "PUT", "/things/urn:x", valid, []string{"Content-Type", "text/plain"}, 415, nil, "Content-Type"},
		{"no content type", "PUT", "/things/urn:x", valid, []string{"Content-Type", ""}, 415, nil, "Content-Type"},
		{"POST no content type", "POST", "/things", thing{title: "X"}.json(t), []string{"Content-Type", ""}, 415, nil, "Content-Type"},
		{"admin no content type", "POST", "/api/v1/things", []byte(`{"td":{}}`), []string{"Content-Type", ""}, 415, nil, "Content-Type"},
		{"connect no content type", "POST", "/api/v1/connect", []byte(`{"addr":""}`), []string{"Content-Type", ""}, 415, nil, "Content-Type"},
		{"too large", "PUT", "/things/urn:x", big, nil, 413, nil, "bytes allowed"},
		{"number out of range", "PUT", "/things/urn:x", hugeNumber, nil, 400, []string{"/lmos:metadata/size"}, ""},
		{"invalid UTF-8", "PUT", "/things/urn:x", withDesc("\"caf\xe9\""), nil, 400, []string{"/description"}, ""},
		{"lone surrogate", "PUT", "/things/urn:x", withDesc(`"\ud800"`), nil, 400, []string{"/description"}, ""},
		{"POST lone surrogate", "POST", "/things", bytes.Replace(withDesc(`"\udfff"`), []byte(`"id":"urn:x",`), nil, 1), nil, 400, []string{"/description"}, ""},
		{"id too long", "PUT", "/things/" + longID, longIDDoc, nil, 400, []string{"/id"}, ""},
		{"PATCH lone surrogate", "PATCH", "/things/urn:x", []byte(`{"title":"\ud800"}`), []string{"Content-Type", tdd.ContentTypeMergePatch}, 400, nil, "lone surrogate"},
		{"admin lone surrogate", "POST", "/api/v1/things", []byte(`{"td":{"title":"\ud800"}}`), []string{"Content-Type", "application/json"}, 400, nil, "lone surrogate"},
		{"PATCH invalid UTF-8", "PATCH", "/things/urn:x", []byte("{\"title\":\"\xff\"}"), []string{"Content-Type", tdd.ContentTypeMergePatch}, 400, nil, "UTF-8"},
		{"POST invalid", "POST", "/things", badTitle, nil, 400, []string{"/title"}, ""},
		{"PATCH wrong type", "PATCH", "/things/urn:x", []byte(`{}`), []string{"Content-Type", "application/json"}, 415, nil, tdd.ContentTypeMergePatch},
		{"PATCH not object", "PATCH", "/things/urn:x", []byte(`[1]`), []string{"Content-Type", tdd.ContentTypeMergePatch}, 400, nil, "JSON object"},
		{"PATCH missing", "PATCH", "/things/urn:none", []byte(`{"title":"t"}`), []string{"Content-Type", tdd.ContentTypeMergePatch}, 404, nil, `"urn:none"`},
		{"DELETE missing", "DELETE", "/things/urn:none", nil, nil, 404, nil, `"urn:none"`},
		{"GET missing", "GET", "/things/urn:none", nil, nil, 404, nil, `"urn:none"`},
		{"GET no id", "GET", "/things/", nil, nil, 404, nil, "no thing id"},
		{"bad publisher", "GET", "/things/urn:x?publisher=nobody", nil, nil, 400, nil, "publisher"},
		{"method", "POST", "/things/urn:x", valid, nil, 405, nil, "allowed: DELETE, GET, HEAD, PATCH, PUT"},
		{"unknown path", "GET", "/nothing", nil, nil, 404, nil, "/nothing"},
		{"bad event type", "GET", "/events/thing_exploded", nil, nil, 404, nil, "thing_exploded"},
		{"bad diff", "GET", "/events?diff=maybe", nil, nil, 400, nil, "diff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := problem(t, do(t, tc.method, env.URL+tc.path, tc.body, tc.hdr...), tc.status)
			if tc.fields != nil && !slices.Equal(fields(p), tc.fields) {
				t.Errorf("fields %v, want %v (%+v)", fields(p), tc.fields, p.ValidationErrors)
			}
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tc.detail)
			}
			if p.Instance == "" {
				t.Error("no instance")
			}
		})
	}
	if env.Publisher.Published != 0 {
		t.Errorf("%d publications after invalid requests only", env.Publisher.Published)
	}
	r := do(t, http.MethodPost, env.URL+"/things/urn:x", nil)
	if allow := r.header.Get("Allow"); allow != "DELETE, GET, HEAD, PATCH, PUT" {
		t.Errorf("Allow %q", allow)
	}
}

func TestPatch(t *testing.T) {
	env := tddtest.NewEnv(t)
	id := "urn:x"
	path := env.URL + "/things/" + id
	ct := []string{"Content-Type", tdd.ContentTypeMergePatch}
	if r := do(t, http.MethodPut, path, thing{id: id, title: "X", desc: "old", vendor: "ACME"}.json(t)); r.status != http.StatusCreated {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}

	r := do(t, http.MethodPatch, path, []byte(`{"title":"X2","description":null,"lmos:metadata":{"lmos:vendor":{"lmos:url":"https://acme.example"}}}`), ct...)
	if r.status != http.StatusNoContent {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	got := do(t, http.MethodGet, path, nil)
	if _, err := lmosproto.VerifyDocument(got.body); err != nil {
		t.Fatalf("patched TD not signed: %v", err)
	}
	td, _ := lmosproto.ParseTD(got.body)
	if td.Title != "X2" || td.Description != "" || td.Seq != 2 || td.Vendor() != "ACME" || td.Metadata.Vendor.URL != "https://acme.example" {
		t.Errorf("patched TD: title %q description %q seq %d vendor %+v", td.Title, td.Description, td.Seq, td.Metadata.Vendor)
	}

	// The result is validated; pointers name its fields.
	p := problem(t, do(t, http.MethodPatch, path, []byte(`{"security":null}`), ct...), http.StatusBadRequest)
	if len(p.ValidationErrors) == 0 {
		t.Errorf("patch removing security: no validation errors: %+v", p)
	}
	p = problem(t, do(t, http.MethodPatch, path, []byte(`{"lmos:groups":[""]}`), ct...), http.StatusBadRequest)
	if !slices.Contains(fields(p), "/lmos:groups/0") {
		t.Errorf("fields %v, want /lmos:groups/0", fields(p))
	}
	p = problem(t, do(t, http.MethodPatch, path, []byte(`{"id":"urn:other"}`), ct...), http.StatusBadRequest)
	if !slices.Equal(fields(p), []string{"/id"}) {
		t.Errorf("id change: fields %v", fields(p))
	}
	if td2, _ := lmosproto.ParseTD(do(t, http.MethodGet, path, nil).body); td2.Seq != 2 {
		t.Errorf("failed patches changed the Thing: seq %d", td2.Seq)
	}
}

func TestLearnedThingsAreReadOnly(t *testing.T) {
	env := tddtest.NewEnv(t)
	other := tddtest.NewIdentity(2)
	id := "urn:shared"
	env.Learn(t, other, thing{id: id, title: "Theirs"}.td(t), 5)
	path := env.URL + "/things/" + id
	byOther := path + "?publisher=" + other.ID.String()
	mp := []string{"Content-Type", tdd.ContentTypeMergePatch}

	for _, tc := range []struct {
		method, url string
		body        []byte
		hdr         []string
	}{
		{http.MethodPut, byOther, thing{id: id, title: "Mine"}.json(t), nil},
		{http.MethodPatch, byOther, []byte(`{"title":"Mine"}`), mp},
		{http.MethodPatch, path, []byte(`{"title":"Mine"}`), mp},
		{http.MethodDelete, byOther, nil, nil},
		{http.MethodDelete, path, nil, nil},
		{http.MethodDelete, env.URL + "/api/v1/things/" + id, nil, nil},
	} {
		p := problem(t, do(t, tc.method, tc.url, tc.body, tc.hdr...), http.StatusForbidden)
		if !strings.Contains(p.Detail, "read-only") || !strings.Contains(p.Detail, other.ID.String()) {
			t.Errorf("%s %s: detail %q", tc.method, tc.url, p.Detail)
		}
	}
	if e, ok := env.Dir.Get(other.ID, id); !ok || e.Seq != 5 {
		t.Fatalf("learned Thing changed: %+v", e)
	}

	// Reads serve the learned Thing as signed by its publisher.
	r := do(t, http.MethodGet, path, nil)
	if s, err := lmosproto.VerifyDocument(r.body); r.status != http.StatusOK || err != nil || s.PeerID != other.ID {
		t.Fatalf("GET learned: %d %v", r.status, err)
	}
	if reg := r.header.Get(tdd.HeaderRegistration); !strings.Contains(reg, `expires="2026-11-23T10:00:00Z", ttl=172800`) {
		t.Errorf("learned registration %q lacks expires and ttl", reg)
	}
	if r.header.Get("Expires") == "" {
		t.Error("no Expires header for a learned Thing")
	}

	// A PUT without publisher creates the node's own Thing of that id,
	// which then wins; the learned one stays reachable.
	if r := do(t, http.MethodPut, path, thing{id: id, title: "Mine"}.json(t)); r.status != http.StatusCreated {
		t.Fatalf("PUT own: %d %s", r.status, r.body)
	}
	if td, _ := lmosproto.ParseTD(do(t, http.MethodGet, path, nil).body); td.Title != "Mine" {
		t.Errorf("GET after own PUT: %q, want the own Thing", td.Title)
	}
	if td, _ := lmosproto.ParseTD(do(t, http.MethodGet, byOther, nil).body); td.Title != "Theirs" {
		t.Errorf("GET ?publisher=other: %q", td.Title)
	}
	if td, _ := lmosproto.ParseTD(do(t, http.MethodGet, path+"?publisher="+other.DID(), nil).body); td.Title != "Theirs" {
		t.Errorf("GET ?publisher=did:key: %q", td.Title)
	}
	if td, _ := lmosproto.ParseTD(do(t, http.MethodGet, path+"?publisher="+env.Self.ID.String(), nil).body); td.Title != "Mine" {
		t.Errorf("GET ?publisher=self: %q", td.Title)
	}
	// Deleting the own Thing leaves the learned one.
	if r := do(t, http.MethodDelete, path, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE own: %d %s", r.status, r.body)
	}
	if td, _ := lmosproto.ParseTD(do(t, http.MethodGet, path, nil).body); td == nil || td.Title != "Theirs" {
		t.Errorf("after deleting the own Thing, GET does not serve the learned one")
	}
}

func TestAmbiguousID(t *testing.T) {
	env := tddtest.NewEnv(t)
	a, b := tddtest.NewIdentity(2), tddtest.NewIdentity(3)
	id := "urn:dup"
	env.Learn(t, a, thing{id: id, title: "A"}.td(t), 1)
	env.Learn(t, b, thing{id: id, title: "B"}.td(t), 1)
	path := env.URL + "/things/" + id

	p := problem(t, do(t, http.MethodGet, path, nil), http.StatusMultipleChoices)
	if len(p.Candidates) != 2 {
		t.Fatalf("candidates %+v, want 2", p.Candidates)
	}
	titles := map[string]string{}
	for _, c := range p.Candidates {
		r := do(t, http.MethodGet, c.Href, nil)
		s, err := lmosproto.VerifyDocument(r.body)
		if err != nil || s.PeerID.String() != c.Publisher {
			t.Fatalf("candidate %+v: %d %v", c, r.status, err)
		}
		td, _ := lmosproto.ParseTD(r.body)
		titles[c.Publisher] = td.Title
		if c.Title != td.Title || c.Modified == "" {
			t.Errorf("candidate %+v", c)
		}
	}
	if titles[a.ID.String()] != "A" || titles[b.ID.String()] != "B" {
		t.Errorf("candidates lead to %v", titles)
	}
	// HEAD answers the same status.
	if r := do(t, http.MethodHead, path, nil); r.status != http.StatusMultipleChoices {
		t.Errorf("HEAD: %d", r.status)
	}
	// An unknown publisher of the id: 404.
	problem(t, do(t, http.MethodGet, path+"?publisher="+tddtest.NewIdentity(4).ID.String(), nil), http.StatusNotFound)
}

func TestNoPublisher(t *testing.T) {
	env := tddtest.NewEnv(t, func(d *tdd.Deps, _ *tdd.Config) { d.Publisher = nil })
	for _, tc := range []struct{ method, path string }{
		{http.MethodPut, "/things/urn:x"}, {http.MethodPost, "/things"}, {http.MethodDelete, "/things/urn:x"},
		{http.MethodPatch, "/things/urn:x"}, {http.MethodPost, "/api/v1/things"},
	} {
		problem(t, do(t, tc.method, env.URL+tc.path, thing{id: "urn:x", title: "X"}.json(t)), http.StatusNotImplemented)
	}
}

func TestNewChecksDeps(t *testing.T) {
	env := tddtest.NewEnv(t)
	for name, tc := range map[string]struct {
		deps tdd.Deps
		cfg  tdd.Config
		want string
	}{
		"no directory": {tdd.Deps{PeerID: env.Self.ID}, tdd.Config{}, "Directory"},
		"no peer id":   {tdd.Deps{Directory: env.Dir}, tdd.Config{}, "PeerID"},
		"no resolver":  {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID}, tdd.Config{}, "Resolver"},
		"base path":    {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID, Resolver: env.Things, BaseURL: "http://h/x"}, tdd.Config{}, "BaseURL"},
		"base scheme":  {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID, Resolver: env.Things, BaseURL: "ftp://h"}, tdd.Config{}, "BaseURL"},
		"negative":     {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID, Resolver: env.Things}, tdd.Config{Heartbeat: -1}, "heartbeat"},
		"limits":       {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID, Resolver: env.Things}, tdd.Config{DefaultLimit: 20, MaxLimit: 10}, "defaultLimit"},
		"default>max":  {tdd.Deps{Directory: env.Dir, PeerID: env.Self.ID, Resolver: env.Things}, tdd.Config{DefaultLimit: 2000}, "defaultLimit"},
	} {
		if _, err := tdd.New(tc.deps, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want an error naming %s", name, err, tc.want)
		}
	}
}
