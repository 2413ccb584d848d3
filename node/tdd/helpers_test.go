package tdd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// thing describes a small valid LMOS TD.
type thing struct {
	id, title, desc string
	typ             string   // lmos:Agent (default) or lmos:Tool
	vendor          string   // lmos:vendor name
	caps            []string // "id" or "id@version"
	groups          []string
}

func (s thing) doc() map[string]any {
	typ := s.typ
	if typ == "" {
		typ = lmosproto.TypeAgent
	}
	d := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               typ,
		"title":               s.title,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]any{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"actions": map[string]any{"ask": map[string]any{
			"forms": []any{map[string]any{"href": "https://backend.example/ask"}},
		}},
	}
	if s.id != "" {
		d["id"] = s.id
	}
	if s.desc != "" {
		d["description"] = s.desc
	}
	if s.vendor != "" {
		d["lmos:metadata"] = map[string]any{"lmos:vendor": map[string]any{"lmos:name": s.vendor}}
	}
	if len(s.caps) > 0 {
		var caps []any
		for _, c := range s.caps {
			id, ver, ok := strings.Cut(c, "@")
			m := map[string]any{"lmos:id": id}
			if ok {
				m["lmos:version"] = ver
			}
			caps = append(caps, m)
		}
		d["lmos:capabilities"] = caps
	}
	if len(s.groups) > 0 {
		d["lmos:groups"] = s.groups
	}
	return d
}

func (s thing) json(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(s.doc())
	if err != nil {
		t.Fatal(err)
	}
	if err := lmosproto.ValidateTD(b); err != nil {
		t.Fatalf("test TD %q: %v", s.id, err)
	}
	return b
}

func (s thing) td(t testing.TB) *lmosproto.TD {
	t.Helper()
	td, err := lmosproto.ParseTD(s.json(t))
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// response is a read HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) contentType() string {
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	return mt
}

// do sends a request; hdr are header name/value pairs (an empty value
// removes the header). A body is sent as application/json unless hdr says
// otherwise.
func do(t testing.TB, method, url string, body []byte, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// problem checks that r is a problem response of status and returns it.
func problem(t testing.TB, r response, status int) lmosproto.Problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.contentType(); ct != tdd.ContentTypeProblem {
		t.Fatalf("content type %q, want %s; body %s", ct, tdd.ContentTypeProblem, r.body)
	}
	var p lmosproto.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	if p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v: want status %d, a title and a detail", p, status)
	}
	return p
}

// fields returns the fields of a problem's validation errors.
func fields(p lmosproto.Problem) []string {
	var out []string
	for _, fe := range p.ValidationErrors {
		out = append(out, fe.Field)
	}
	return out
}

// tdList decodes a listing.
func tdList(t testing.TB, r response) []*lmosproto.TD {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("listing: status %d: %s", r.status, r.body)
	}
	if ct := r.contentType(); ct != tdd.ContentTypeLDJSON {
		t.Fatalf("listing: content type %q", ct)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r.body, &raws); err != nil {
		t.Fatalf("listing %s: %v", r.body, err)
	}
	out := make([]*lmosproto.TD, len(raws))
	for i, raw := range raws {
		td, err := lmosproto.ParseTD(raw)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = td
	}
	return out
}

func ids(tds []*lmosproto.TD) []string {
	out := make([]string, len(tds))
	for i, td := range tds {
		out[i] = td.ID
	}
	return out
}
