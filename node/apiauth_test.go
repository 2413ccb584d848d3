package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// send sends method u with body (JSON) and the Authorization header auth
// (none if empty) and returns the status and body.
func send(t *testing.T, method, u, auth, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
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
	return resp.StatusCode, b
}

// TestAPITokenDefault: without apiToken in the config the node makes
// <home>/api-token (0600) and requires it for everything that acts as the
// node, on loopback too; reads and invocations stay open, and the TDs it
// serves say so.
func TestAPITokenDefault(t *testing.T) {
	home := t.TempDir()
	net := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.Home = home }})
	n := net.Nodes[0]
	tok := n.APIToken()
	fi, err := os.Stat(filepath.Join(home, homedir.APITokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, %v; want mode 0600", homedir.APITokenFile, fi, err)
	}
	t.Setenv(config.APITokenEnv, "")
	if err := os.Unsetenv(config.APITokenEnv); err != nil {
		t.Fatal(err)
	}
	if got, err := homedir.LoadAPIToken(home); err != nil || got != tok || len(tok) < 32 {
		t.Fatalf("LoadAPIToken: %q, %v; node's token %q", got, err, tok)
	}
	id := testnet.UniqueID(t)
	if _, err := n.Register(matrixTD(t, id), interact.NewThing().OnAction("note", func(context.Context, lmosproto.Value, func(lmosproto.Value)) (lmosproto.Value, error) {
		return lmosproto.Value{}, nil
	})); err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.APIAddr()
	td := testnet.TD(t, testnet.UniqueID(t), "Admin", "admin")
	raw, err := json.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	admin := []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/things", `{"td":` + string(raw) + `}`},
		{http.MethodDelete, "/api/v1/things/" + url.PathEscape(id), ""},
		{http.MethodPut, "/things/" + url.PathEscape(td.ID), string(raw)},
		{http.MethodPost, "/things", string(raw)},
		{http.MethodPatch, "/things/" + url.PathEscape(id), `{"title":"x"}`},
		{http.MethodDelete, "/things/" + url.PathEscape(id), ""},
		{http.MethodPost, "/api/v1/connect", `{"addr":"/ip4/127.0.0.1/tcp/1/p2p/` + n.PeerID().String() + `"}`},
		{http.MethodPost, "/api/v1/groups", `{"name":"g"}`},
		{http.MethodPost, "/api/v1/groups/join", `{"token":"x"}`},
		{http.MethodPost, "/nope", ""},
	}
	for _, rq := range admin {
		for _, auth := range []string{"", "Bearer wrong-token-wrong-token-wrong-token"} {
			if status, body := send(t, rq.method, base+rq.path, auth, rq.body); status != http.StatusUnauthorized || len(body) != 0 {
				t.Errorf("%s %s with %q: %d %s, want 401", rq.method, rq.path, auth, status, body)
			}
		}
	}
	// The Thing is still there: nothing above acted.
	if status, _ := send(t, http.MethodGet, base+"/things/"+url.PathEscape(id), "", ""); status != http.StatusOK {
		t.Fatalf("GET the Thing: %d", status)
	}
	// With the token the same requests are served (whatever they answer).
	for _, rq := range admin[:2] {
		if status, body := send(t, rq.method, base+rq.path, "Bearer "+tok, rq.body); status/100 != 2 {
			t.Errorf("%s %s with the token: %d %s", rq.method, rq.path, status, body)
		}
	}
	// Reads and invocations need no token.
	id2 := testnet.UniqueID(t)
	if _, err := n.Register(matrixTD(t, id2), interact.NewThing().OnAction("note", func(context.Context, lmosproto.Value, func(lmosproto.Value)) (lmosproto.Value, error) {
		return lmosproto.Value{}, nil
	})); err != nil {
		t.Fatal(err)
	}
	for _, rq := range []struct{ method, path, body string }{
		{http.MethodGet, "/things", ""},
		{http.MethodGet, "/api/v1/node", ""},
		{http.MethodGet, "/api/v1/things", ""},
		{http.MethodGet, "/api/v1/groups", ""},
		{http.MethodGet, "/.well-known/wot", ""},
		{http.MethodPost, "/things/" + url.PathEscape(id2) + "/actions/note", `"hello"`},
	} {
		if status, body := send(t, rq.method, base+rq.path, "", rq.body); status/100 != 2 {
			t.Errorf("%s %s without the token: %d %s, want 2xx", rq.method, rq.path, status, body)
		}
	}
	// The consumer view declares nosec: invocations need nothing; the
	// directory TD puts the bearer scheme on its writes.
	_, body := send(t, http.MethodGet, base+"/things/"+url.PathEscape(id2)+"/td", "", "")
	if !strings.Contains(string(body), `"security":"nosec_sc"`) || strings.Contains(string(body), "bearer") {
		t.Errorf("consumer view: %s", body)
	}
	_, body = send(t, http.MethodGet, base+"/.well-known/wot", "", "")
	if !strings.Contains(string(body), `"security":"nosec_sc"`) || !strings.Contains(string(body), `"bearer_sc"`) {
		t.Errorf("directory TD: %s", body)
	}
	// The agents' WebSocket registers Things as the node's own: token; the
	// consumers' one does not need it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := func(auth string) *websocket.DialOptions {
		o := &websocket.DialOptions{Subprotocols: []string{lmosproto.WebSocketSubprotocol}}
		if auth != "" {
			o.HTTPHeader = http.Header{"Authorization": {auth}}
		}
		return o
	}
	if c, resp, err := websocket.Dial(ctx, "ws://"+n.APIAddr()+"/ws/agent", opts("")); err == nil {
		_ = c.CloseNow()
		t.Error("/ws/agent upgraded without the token")
	} else if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/ws/agent without the token: %v, want 401", resp)
	}
	for _, tc := range []struct{ path, auth string }{{"/ws/agent", "Bearer " + tok}, {"/ws", ""}} {
		c, _, err := websocket.Dial(ctx, "ws://"+n.APIAddr()+tc.path, opts(tc.auth))
		if err != nil {
			t.Errorf("%s with %q: %v", tc.path, tc.auth, err)
			continue
		}
		_ = c.CloseNow()
	}
}

// TestAPITokenForAll: requireTokenFor "all" guards reads and invocations
// too, with the token of <home>/api-token, and the consumer view then
// declares the bearer scheme.
func TestAPITokenForAll(t *testing.T) {
	net := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIAuth.RequireTokenFor = config.TokenForAll }})
	n := net.Nodes[0]
	id := testnet.UniqueID(t)
	if _, err := n.Register(matrixTD(t, id), interact.NewThing()); err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.APIAddr()
	for _, p := range []string{"/things", "/api/v1/node", "/things/" + url.PathEscape(id) + "/td"} {
		if status, _ := send(t, http.MethodGet, base+p, "", ""); status != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, status)
		}
	}
	status, body := send(t, http.MethodGet, base+"/things/"+url.PathEscape(id)+"/td", "Bearer "+n.APIToken(), "")
	if status != http.StatusOK || !strings.Contains(string(body), `"security":"bearer_sc"`) {
		t.Errorf("consumer view with the token: %d %s", status, body)
	}
}

// TestConfigAPIAuth: the values of apiAuth.requireTokenFor.
func TestConfigAPIAuth(t *testing.T) {
	for _, tc := range []struct{ api, token, mode, want string }{
		{"127.0.0.1:5080", "", "admin", ""},
		{"127.0.0.1:5080", "", "all", ""},
		{"127.0.0.1:5080", "", "", ""},
		{"127.0.0.1:5080", "", "reads", `config: apiAuth: requireTokenFor: "reads"`},
		{"0.0.0.0:5080", testToken, "admin", "config: apiAuth: requireTokenFor: \"admin\" needs the api on a loopback address"},
		{"0.0.0.0:5080", testToken, "all", ""},
	} {
		cfg := config.Loopback(t.TempDir())
		cfg.API, cfg.APIToken, cfg.APIAuth.RequireTokenFor = tc.api, tc.token, tc.mode
		err := cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %q: %v, want %q", tc.api, tc.mode, err, tc.want)
		}
	}
}
