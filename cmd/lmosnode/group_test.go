package main

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// groupAPI answers the group API of docs/groups.md ("HTTP API") with the
// documented JSON shapes, from canned groups, and records the requests: it
// checks the commands' requests, not the group service (which has its own
// tests).
type groupAPI struct {
	t      *testing.T
	mu     sync.Mutex
	groups []map[string]any
	reqs   []string         // "METHOD path body"
	joined chan struct{}    // closed: the pending join went through
	posts  []map[string]any // sent on GET …/messages, then the stream ends
}

const (
	alphaID = "bafkreidcalf6amvfg4wz4x7nr7e7lxoeydhsyvfnkrrdxmaqboehuxl4gu" // a real group ID: join tokens name it
	betaID  = "bafkreibetabetabetabetabetabetabetabetabetabetabetabeta"
	gammaID = "bafkreigammagammagammagammagammagammagammagammagammagam"
	peerA   = "12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf"
	peerB   = "12D3KooWRBhwfeP2Y4TCx1SM6s9rUoTYP7cn2vLRjE5dDfjufjRE"
)

func groupInfoOf(id, name string, member, admin bool) map[string]any {
	return map[string]any{
		"id": id, "name": name, "founder": peerA, "created": "2026-11-21T08:00:00Z", "dissolved": false,
		"policy": map[string]any{"postRole": "member"},
		"members": []any{
			map[string]any{"peer": peerA, "role": "admin", "admin": true, "things": []string{}, "since": "2026-11-21T08:00:00Z"},
			map[string]any{"peer": peerB, "role": "auditor", "admin": false, "things": []string{"urn:example:diagnostics"}, "since": "2026-11-21T08:05:00Z"},
		},
		"self":  map[string]any{"member": member, "admin": admin},
		"heads": []string{"bafkreihead"}, "ops": 2,
	}
}

// newGroupEnv serves the directory API of a tddtest.Env plus the group
// API and GET /api/v1/node, and writes the URL into a home's api file.
func newGroupEnv(t *testing.T) (*groupAPI, *tddtest.Env, string) {
	t.Helper()
	g := &groupAPI{t: t, joined: make(chan struct{})}
	g.groups = []map[string]any{
		groupInfoOf(alphaID, "diagnostics", true, true),
		groupInfoOf(betaID, "ops", true, false),
		groupInfoOf(gammaID, "ops", false, false), // known, not a member
	}
	env := tddtest.NewEnv(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/node", func(w http.ResponseWriter, _ *http.Request) {
		writeTestJSON(w, http.StatusOK, api.NodeInfo{PeerID: env.Self.ID.String(), DIDKey: env.Self.DID()})
	})
	mux.HandleFunc("/api/v1/groups", g.serve)
	mux.HandleFunc("/api/v1/groups/", g.serve)
	mux.Handle("/", env.Handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = env.Handler.Close()
		srv.Close()
	})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, homedir.APIFile), []byte(srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return g, env, home
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeTestProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}

func (g *groupAPI) find(id string) map[string]any {
	for _, gi := range g.groups {
		if gi["id"] == id {
			return gi
		}
	}
	return nil
}

func (g *groupAPI) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reqs)
}

func (g *groupAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	path := r.URL.Path
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	g.reqs = append(g.reqs, strings.TrimSpace(r.Method+" "+path+" "+string(body)))
	g.mu.Unlock()
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/v1/groups"), "/")
	parts := strings.Split(rest, "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		writeTestJSON(w, http.StatusOK, g.groups)
		return
	case rest == "" && r.Method == http.MethodPost:
		var req struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(body, &req) != nil || req.Name == "" {
			writeTestProblem(w, http.StatusBadRequest, "name: required")
			return
		}
		writeTestJSON(w, http.StatusCreated, groupInfoOf("bafkreinew", req.Name, true, true))
		return
	case rest == "join" && r.Method == http.MethodPost:
		writeTestJSON(w, http.StatusAccepted, map[string]any{"group": alphaID, "pending": true})
		return
	}
	gi := g.find(parts[0])
	if gi == nil {
		writeTestProblem(w, http.StatusNotFound, fmt.Sprintf("no group %q", parts[0]))
		return
	}
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		out := maps(gi)
		if parts[0] == alphaID {
			select {
			case <-g.joined:
			default:
				out["self"] = map[string]any{"member": false, "admin": false}
			}
		}
		out["log"] = testLog(g.t)
		writeTestJSON(w, http.StatusOK, out)
	case len(parts) == 2 && parts[1] == "invitations" && r.Method == http.MethodPost:
		writeTestJSON(w, http.StatusCreated, map[string]any{"token": "lmosgroup:dG9rZW4", "id": "bafkreiinv", "expires": "2026-11-22T08:00:00Z"})
	case len(parts) == 2 && parts[1] == "invitations" && r.Method == http.MethodGet:
		writeTestJSON(w, http.StatusOK, []map[string]any{{"id": "bafkreiinv", "issuer": peerA, "role": "member", "things": []string{},
			"uses": 1, "used": 0, "issued": "2026-11-22T07:00:00Z", "expires": "2026-11-22T08:00:00Z", "status": "outstanding", "mine": true}})
	case len(parts) == 3 && parts[1] == "invitations" && r.Method == http.MethodDelete:
		writeTestJSON(w, http.StatusOK, gi)
	case len(parts) == 3 && parts[1] == "members" && r.Method == http.MethodDelete:
		if parts[2] == peerA {
			writeTestProblem(w, http.StatusConflict, "the last admin cannot be removed: dissolve the group instead")
			return
		}
		writeTestJSON(w, http.StatusOK, gi)
	case len(parts) == 2 && parts[1] == "messages" && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusAccepted)
	case len(parts) == 2 && parts[1] == "messages" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, p := range g.posts {
			b, _ := json.Marshal(p)
			fmt.Fprintf(w, ": keep-alive\n\nevent: post\ndata: %s\n\n", b)
		}
	default:
		writeTestJSON(w, http.StatusOK, gi) // PATCH, DELETE, admins, leave
	}
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// testLog is a GroupInfo log: a genesis signed for real (its name read
// from the signed operation) and an add without effect.
func testLog(t *testing.T) []any {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	signed, err := lmosproto.SignDocument([]byte(`{"type":"lmos:GroupOp","kind":"genesis","name":"diagnostics","nonce":"x"}`), key, time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var genesis json.RawMessage = signed
	author, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	// docs/groups.md: {"id", "kind", "author", "created", "peer"?, "effective", "op"}
	return []any{
		map[string]any{"id": "bafkreigenesis", "kind": "genesis", "author": author, "created": "2026-11-21T08:00:00Z", "effective": true, "op": genesis},
		map[string]any{"id": "bafkreiadd", "kind": "add", "peer": peerB, "author": peerB,
			"created": "2026-11-21T08:06:00Z", "effective": false,
			"op": map[string]any{"type": "lmos:GroupOp", "kind": "add", "peer": peerB}},
	}
}

func TestGroupResolve(t *testing.T) {
	g, _, home := newGroupEnv(t)
	for _, tc := range []struct {
		arg, want, err string
	}{
		{alphaID, alphaID, ""},
		{"diagnostics", alphaID, ""},
		{"ops", betaID, ""}, // two named ops: the one this node belongs to
		{gammaID, gammaID, ""},
		{"nope", "", `no group named "nope"`},
		{"bafkreiunknownunknownunknownunknownunknownunknown", "", "404"}, // passed on; the node answers
	} {
		out, errOut, code := lmosnode(t, "", "group", "show", tc.arg, "--json", "--home", home)
		if tc.err != "" {
			if code != exitNotFound || !strings.Contains(errOut, tc.err) {
				t.Errorf("show %s: exit %d, stderr %q, want 3 and %q", tc.arg, code, errOut, tc.err)
			}
			continue
		}
		var got struct {
			ID string `json:"id"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.ID != tc.want {
			t.Errorf("show %s: exit %d, id %q (%s), want %s", tc.arg, code, got.ID, errOut, tc.want)
		}
	}
	// Two groups of this node with one name: ambiguous.
	g.mu.Lock()
	g.groups[2] = groupInfoOf(gammaID, "ops", true, false)
	g.mu.Unlock()
	if _, errOut, code := lmosnode(t, "", "group", "show", "ops", "--home", home); code != 1 || !strings.Contains(errOut, "2 groups are named") || !strings.Contains(errOut, betaID) || !strings.Contains(errOut, gammaID) {
		t.Errorf("ambiguous name: exit %d, stderr %q", code, errOut)
	}
}

func TestGroupShow(t *testing.T) {
	_, _, home := newGroupEnv(t)
	out := mustRun(t, "group", "show", "ops", "--home", home)
	genesisAuthor, err := lmosproto.PeerIDFromEd25519(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ID:          " + betaID,
		"Name:        ops",
		"Policy:      postRole member, maxMembers none",
		"This node:   member",
		"PEER ROLE ADMIN THINGS SINCE",
		peerA + " admin yes all 2026-11-21T08:00:00Z",
		peerB + " auditor no urn:example:diagnostics 2026-11-21T08:05:00Z",
		"KIND AUTHOR TARGET EFFECTIVE CREATED",
		"genesis " + genesisAuthor.String() + " diagnostics yes 2026-11-21T08:00:00Z",
		"add " + peerB + " " + peerB + " no 2026-11-21T08:06:00Z",
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if l == want || strings.Join(strings.Fields(l), " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

func TestGroupCommands(t *testing.T) {
	g, _, home := newGroupEnv(t)
	last := func() string {
		reqs := g.requests()
		return reqs[len(reqs)-1]
	}

	out := mustRun(t, "group", "create", "lab", "--post-role", "admin", "--max-members", "3", "--home", home)
	if !strings.Contains(out, "created group lab (bafkreinew)") || last() != `POST /api/v1/groups {"name":"lab","policy":{"postRole":"admin","maxMembers":3}}` {
		t.Errorf("create: %q, request %q", out, last())
	}
	if _, errOut, code := lmosnode(t, "", "group", "create", "lab", "--post-role", "owner", "--home", home); code != 1 || !strings.Contains(errOut, "--post-role") {
		t.Errorf("bad --post-role: %d %q", code, errOut)
	}

	out, errOut, code := lmosnode(t, "", "group", "invite", "diagnostics", "--for", peerB, "--ttl", "1h", "--uses", "3", "--role", "auditor", "--thing", "urn:a", "--thing", "urn:b", "--home", home)
	if code != 0 || out != "lmosgroup:dG9rZW4\n" || !strings.Contains(errOut, "expires") {
		t.Errorf("invite: %d %q %q", code, out, errOut)
	}
	if want := `POST /api/v1/groups/` + alphaID + `/invitations {"for":"` + peerB + `","role":"auditor","things":["urn:a","urn:b"],"ttl":"1h0m0s","uses":3}`; last() != want {
		t.Errorf("invite request:\n%s\nwant\n%s", last(), want)
	}
	if _, errOut, code := lmosnode(t, "", "group", "invite", "diagnostics", "--for", "nobody", "--home", home); code != 1 || !strings.Contains(errOut, "--for") {
		t.Errorf("bad --for: %d %q", code, errOut)
	}
	mustRun(t, "group", "invite", "diagnostics", "--uses", "0", "--home", home)
	if want := `POST /api/v1/groups/` + alphaID + `/invitations {"uses":0}`; last() != want {
		t.Errorf("invite --uses 0 request: %s, want %s", last(), want)
	}
	mustRun(t, "group", "invite", "diagnostics", "--home", home)
	if want := `POST /api/v1/groups/` + alphaID + `/invitations {}`; last() != want {
		t.Errorf("invite request with the defaults: %s, want %s", last(), want)
	}
	out = mustRun(t, "group", "invites", "diagnostics", "--all", "--home", home)
	if !strings.Contains(out, "bafkreiinv") || !strings.Contains(out, "outstanding") || last() != `GET /api/v1/groups/`+alphaID+`/invitations?all=true` {
		t.Errorf("invites: %q, request %q", out, last())
	}
	out = mustRun(t, "group", "revoke-invite", "diagnostics", "bafkreiinv", "--home", home)
	if !strings.Contains(out, "revoked an invitation to group") || last() != `DELETE /api/v1/groups/`+alphaID+`/invitations/bafkreiinv` {
		t.Errorf("revoke-invite: %q, request %q", out, last())
	}

	out = mustRun(t, "group", "ls", "--home", home)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || strings.Join(strings.Fields(lines[1]), " ") != "diagnostics 2 admin active "+alphaID {
		t.Errorf("ls:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		req  string
		out  string
	}{
		{[]string{"remove", "diagnostics", peerB}, "DELETE /api/v1/groups/" + alphaID + "/members/" + peerB, "removed member from group diagnostics"},
		{[]string{"admin", "diagnostics", peerB, "--grant"}, "PUT /api/v1/groups/" + alphaID + "/admins/" + peerB, "granted admin in group diagnostics"},
		{[]string{"admin", "diagnostics", peerB, "--revoke"}, "DELETE /api/v1/groups/" + alphaID + "/admins/" + peerB, "revoked admin in group diagnostics"},
		{[]string{"rename", "diagnostics", "diag 2"}, "PATCH /api/v1/groups/" + alphaID + ` {"name":"diag 2"}`, "renamed group diagnostics"},
		{[]string{"leave", "ops"}, "POST /api/v1/groups/" + betaID + "/leave", "left group ops"},
		{[]string{"dissolve", alphaID}, "DELETE /api/v1/groups/" + alphaID, "dissolved group diagnostics"},
		{[]string{"publish", "diagnostics", "maintenance at 18:00"}, "POST /api/v1/groups/" + alphaID + `/messages "maintenance at 18:00"`, ""},
		{[]string{"publish", "diagnostics", "--value", `{"alert":"disk"}`}, "POST /api/v1/groups/" + alphaID + `/messages {"alert":"disk"}`, ""},
	} {
		out := mustRun(t, append(append([]string{"group"}, tc.args...), "--home", home)...)
		if last() != tc.req || !strings.HasPrefix(out, tc.out) {
			t.Errorf("group %v: request %q, output %q; want %q, %q", tc.args, last(), out, tc.req, tc.out)
		}
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"admin", "diagnostics", peerB}, "exactly one of --grant and --revoke"},
		{[]string{"remove", "diagnostics", "not-a-peer"}, `PEER "not-a-peer" is not a peer ID`},
		{[]string{"remove", "diagnostics", peerA}, "409 Conflict: the last admin cannot be removed"},
		{[]string{"publish", "diagnostics", "--value", "{"}, "is not JSON"},
		{[]string{"join", "not-a-token"}, `does not start with "lmosgroup:"`},
	} {
		_, errOut, code := lmosnode(t, "", append(append([]string{"group"}, tc.args...), "--home", home)...)
		if code != 1 || !strings.Contains(errOut, tc.err) {
			t.Errorf("group %v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.err)
		}
	}
}

func TestGroupJoin(t *testing.T) {
	g, _, home := newGroupEnv(t)
	token, err := groups.NewInvitation(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)),
		groups.Invitation{Group: alphaID, Name: "diagnostics", Expires: time.Now().Add(time.Hour)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "group", "join", token, "--home", home)
	if !strings.Contains(out, "join of group diagnostics ("+alphaID+") pending") {
		t.Errorf("pending join: %q", out)
	}
	if reqs := g.requests(); reqs[len(reqs)-1] != `POST /api/v1/groups/join {"token":"`+token+`"}` {
		t.Errorf("join request %q", reqs[len(reqs)-1])
	}

	// --wait polls until the node reports this node a member.
	done := make(chan struct{})
	var wout, werr string
	var wcode int
	go func() {
		defer close(done)
		wout, werr, wcode = lmosnode(t, "", "group", "join", token, "--wait", "--home", home)
	}()
	polled := func() bool { return slices.Contains(g.requests(), "GET /api/v1/groups/"+alphaID) }
	for !polled() {
		select {
		case <-done:
			t.Fatalf("join --wait ended before it polled: exit %d, %q %q", wcode, wout, werr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(g.joined)
	<-done
	if wcode != 0 || !strings.Contains(wout, "joined group diagnostics") {
		t.Errorf("join --wait: exit %d, %q %q", wcode, wout, werr)
	}
}

func TestGroupSubscribe(t *testing.T) {
	g, _, home := newGroupEnv(t)
	g.posts = []map[string]any{
		{"from": peerB, "body": "hello members", "sent": "2026-11-21T08:10:00Z"},
		{"from": peerA, "body": map[string]any{"alert": "disk"}, "sent": "2026-11-21T08:11:00Z"},
	}
	out, errOut, code := lmosnode(t, "", "group", "subscribe", "diagnostics", "--home", home)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || !strings.Contains(errOut, "ended by the node") || len(lines) != 2 {
		t.Fatalf("subscribe: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.HasSuffix(lines[0], " …"+peerB[len(peerB)-8:]+": hello members") || !strings.HasSuffix(lines[1], ": "+`{"alert":"disk"}`) {
		t.Errorf("subscribe lines:\n%s", out)
	}
	out, _, _ = lmosnode(t, "", "group", "subscribe", "diagnostics", "--json", "--home", home)
	var p groupapi.Post
	if err := json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &p); err != nil || p.From.String() != peerB {
		t.Errorf("subscribe --json: %q (%v)", out, err)
	}
}

// find and things ls show the groups a Thing is restricted to, by name
// where the node knows the group.
func TestFindShowsGroups(t *testing.T) {
	_, env, home := newGroupEnv(t)
	td, err := lmosproto.ParseTD(mustRead(t, geocoderFile))
	if err != nil {
		t.Fatal(err)
	}
	td.Groups = []string{alphaID, "bafkreiforeignforeignforeignforeignforeign"}
	env.Learn(t, tddtest.NewIdentity(2), td, 1)
	out := mustRun(t, "find", "--home", home)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "GROUPS") || !strings.Contains(lines[1], " diagnostics,bafkreiforeignforeignforeignforeignforeign ") {
		t.Errorf("find:\n%s", out)
	}
}
