package groupapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// apiDo sends a request, checks the status and decodes the body into out
// (if not nil).
func (s *server) apiDo(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	status, _, raw := s.do(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// TestGroupAPI checks the group routes' answers on one node: the statuses
// of docs/groups.md and problem details naming the field.
func TestGroupAPI(t *testing.T) {
	s := newServer(t)
	var info groupapi.GroupInfo
	s.apiDo(t, http.MethodPost, "/api/v1/groups", `{"name": "lab", "policy": {"postRole": "admin"}}`, http.StatusCreated, &info)
	if info.Policy.PostRole != groups.RoleAdmin || !info.Self.Admin || info.Ops != 1 {
		t.Fatalf("created %+v", info)
	}
	var list []groupapi.GroupInfo
	s.apiDo(t, http.MethodGet, "/api/v1/groups", "", http.StatusOK, &list)
	if len(list) != 1 || list[0].ID != info.ID {
		t.Fatalf("list %+v", list)
	}
	s.apiDo(t, http.MethodPatch, "/api/v1/groups/lab", `{"name": "lab-2", "policy": {"postRole": "member"}}`, http.StatusOK, &info)
	if info.Name != "lab-2" || info.Policy.PostRole != groups.RoleMember || info.Ops != 3 {
		t.Fatalf("patched %+v", info)
	}
	s.apiDo(t, http.MethodPut, "/api/v1/groups/"+info.ID+"/admins/"+s.self.String(), "", http.StatusOK, &info)
	if info.Ops != 3 {
		t.Fatalf("granting admin to an admin added an operation: %d ops", info.Ops)
	}
	var shown groupapi.GroupInfo
	s.apiDo(t, http.MethodGet, "/api/v1/groups/lab-2", "", http.StatusOK, &shown)
	if len(shown.Log) != 3 || shown.Log[0].Kind != groups.KindGenesis || !shown.Log[2].Effective {
		t.Fatalf("log %+v", shown.Log)
	}
	other, err := peer.Decode("12D3KooWGK79YXfbaPRNs5iQ1QqiYgftqgpkoj7dbggbxTHYNN6u")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, body string
		status             int
		detail             string
	}{
		{http.MethodPost, "/api/v1/groups", `{"nom": "x"}`, http.StatusBadRequest, "nom"},
		{http.MethodPost, "/api/v1/groups", `{}`, http.StatusBadRequest, "name"},
		{http.MethodPost, "/api/v1/groups", `{"name": "x", "policy": {"postRole": "boss"}}`, http.StatusBadRequest, "postRole"},
		{http.MethodGet, "/api/v1/groups/nope", "", http.StatusNotFound, "nope"},
		{http.MethodPost, "/api/v1/groups/lab-2/invitations", `{"ttl": "soon"}`, http.StatusBadRequest, "ttl"},
		{http.MethodPost, "/api/v1/groups/lab-2/invitations", `{"for": "bob"}`, http.StatusBadRequest, "for"},
		{http.MethodPost, "/api/v1/groups/lab-2/invitations", `{"uses": -1}`, http.StatusBadRequest, "uses"},
		{http.MethodPost, "/api/v1/groups/lab-2/invitations", `{"once": true}`, http.StatusBadRequest, "once"},
		{http.MethodGet, "/api/v1/groups/lab-2/invitations?all=maybe", "", http.StatusBadRequest, "all"},
		{http.MethodDelete, "/api/v1/groups/lab-2/invitations/nope", "", http.StatusBadRequest, "nope"},
		{http.MethodGet, "/api/v1/groups/nope/invitations", "", http.StatusNotFound, "nope"},
		{http.MethodPost, "/api/v1/groups/join", `{"token": "lmosgroup:AAAA"}`, http.StatusBadRequest, "token"},
		{http.MethodPost, "/api/v1/groups/join", `{}`, http.StatusBadRequest, "token"},
		{http.MethodDelete, "/api/v1/groups/lab-2/members/bob", "", http.StatusBadRequest, "peer"},
		{http.MethodDelete, "/api/v1/groups/lab-2/members/" + other.String(), "", http.StatusNotFound, other.String()},
		{http.MethodDelete, "/api/v1/groups/lab-2/members/" + s.self.String(), "", http.StatusConflict, "admin"},
		{http.MethodDelete, "/api/v1/groups/lab-2/admins/" + s.self.String(), "", http.StatusConflict, "admin"},
		{http.MethodPost, "/api/v1/groups/lab-2/leave", "", http.StatusConflict, "admin"},
		{http.MethodPost, "/api/v1/groups/lab-2/messages", `not json`, http.StatusBadRequest, "JSON"},
	} {
		var p lmosproto.Problem
		s.apiDo(t, c.method, c.path, c.body, c.status, &p)
		if p.Status != c.status || !strings.Contains(p.Detail, c.detail) || p.Instance != strings.Split(c.path, "?")[0] {
			t.Errorf("%s %s: %+v, want %d naming %q", c.method, c.path, p, c.status, c.detail)
		}
	}
	s.apiDo(t, http.MethodPost, "/api/v1/groups/lab-2/messages", `"hi"`, http.StatusAccepted, nil)
	s.apiDo(t, http.MethodDelete, "/api/v1/groups/lab-2", "", http.StatusOK, &info)
	if !info.Dissolved || info.Self.Member {
		t.Fatalf("dissolved %+v", info)
	}
	s.apiDo(t, http.MethodDelete, "/api/v1/groups/lab-2", "", http.StatusConflict, nil)
	s.apiDo(t, http.MethodGet, "/api/v1/groups/lab-2/messages", "", http.StatusConflict, nil)
}

// The JSON shapes of docs/groups.md: a member without a scope has
// "things": [], an answer with no log has no "log", a problem is
// application/problem+json.
func TestGroupAPIShapes(t *testing.T) {
	s := newServer(t)
	status, ctype, body := s.do(t, http.MethodPost, "/api/v1/groups", `{"name": "lab"}`)
	if status != http.StatusCreated || ctype != "application/json" {
		t.Fatalf("create: %d %s", status, ctype)
	}
	var g map[string]json.RawMessage
	if err := json.Unmarshal(body, &g); err != nil {
		t.Fatal(err)
	}
	want := []string{"created", "dissolved", "founder", "heads", "id", "members", "name", "ops", "policy", "self"}
	if keys := slices.Sorted(maps.Keys(g)); !slices.Equal(keys, want) {
		t.Errorf("GroupInfo members %v, want %v", keys, want)
	}
	if !strings.Contains(string(g["members"]), `"things":[]`) || string(g["policy"]) != `{"postRole":"member"}` {
		t.Errorf("members %s, policy %s", g["members"], g["policy"])
	}
	if status, ctype, _ := s.do(t, http.MethodGet, "/api/v1/groups/nope", ""); status != http.StatusNotFound || ctype != lmosproto.ContentTypeProblemJSON {
		t.Errorf("unknown group: %d %s", status, ctype)
	}
	// Only the documented methods are served: the parent mux routes the
	// others (here: its 405).
	if status, _, _ := s.do(t, http.MethodPut, "/api/v1/groups", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT /api/v1/groups: %d", status)
	}
}

// The message stream: one "post" event per post, the first with the
// retry field; Close ends it.
func TestGroupAPIMessages(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := s.client.CreateGroup(ctx, "lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := s.send(t, ctx, http.MethodGet, "/api/v1/groups/lab/messages", "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("stream: %s %v", resp.Status, resp.Header)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				return "(end)"
			}
			return l
		case <-ctx.Done():
			t.Fatal("no line")
		}
		return ""
	}
	if err := s.client.Post(ctx, info.ID, json.RawMessage(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "event: post" {
		t.Fatalf("event line %q", l)
	}
	data, ok := strings.CutPrefix(next(), "data: ")
	var p groupapi.Post
	if !ok || json.Unmarshal([]byte(data), &p) != nil || p.From != s.self || string(p.Body) != `{"n":1}` || p.Sent.IsZero() {
		t.Fatalf("data %q", data)
	}
	if l := next(); l != "retry: 2000" {
		t.Fatalf("after the first data %q, want the retry field", l)
	}
	if err := s.handler.Close(); err != nil {
		t.Fatal(err)
	}
	for l := next(); l != "(end)"; l = next() {
		if l != "" {
			t.Fatalf("after Close: %q", l)
		}
	}
}
