package node_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// testToken is an API token of the minimum length.
const testToken = "0123456789abcdef0123456789abcdef"

// tokenNode starts a node on loopback whose API requires testToken, with
// one Thing of its own, and returns it with the Thing's id.
func tokenNode(t *testing.T) (*node.Node, string) {
	t.Helper()
	net := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIToken = testToken }})
	n := net.Nodes[0]
	id := testnet.UniqueID(t)
	if _, err := n.Register(testnet.TD(t, id, "Guarded", "guard"), interact.NewThing()); err != nil {
		t.Fatal(err)
	}
	return n, id
}

// get sends GET u with the Authorization header auth (none if empty) and
// returns the response with its body read.
func get(t *testing.T, u, auth string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestAPITokenRequired(t *testing.T) {
	n, id := tokenNode(t)
	base := "http://" + n.APIAddr()
	paths := []string{
		"/things",
		"/things/" + url.PathEscape(id),
		"/things/" + url.PathEscape(id) + "/td",
		"/api/v1/node",
		"/api/v1/things",
		"/api/v1/peers",
		"/.well-known/wot",
		"/events",
		"/nope",
	}
	for _, p := range paths {
		for _, auth := range []string{"", "Bearer", "Bearer wrong-token-wrong-token-wrong-token", "Basic " + testToken, "Bearer " + testToken + "x", testToken} {
			resp, body := get(t, base+p, auth)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with %q: %s, want 401", p, auth, resp.Status)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="lmosnode"` {
				t.Errorf("GET %s with %q: WWW-Authenticate %q", p, auth, got)
			}
			if len(body) != 0 {
				t.Errorf("GET %s with %q: body %q, want none", p, auth, body)
			}
		}
	}
	// With the token: answered, whatever the Host header (the token, not
	// the Host check, guards a protected API).
	for _, p := range []string{"/things", "/api/v1/node", "/things/" + url.PathEscape(id) + "/td", "/.well-known/wot"} {
		for _, auth := range []string{"Bearer " + testToken, "bearer " + testToken} {
			req, _ := http.NewRequest(http.MethodGet, base+p, nil)
			req.Header.Set("Authorization", auth)
			req.Host = "node.example:5080"
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s with the token (%q): %s, want 200", p, auth, resp.Status)
			}
		}
	}
	// The client side: a client with httpapi.BearerClient sends the token.
	info, err := apiclient.New(base, httpapi.BearerClient(testToken)).Node(context.Background())
	if err != nil || info.PeerID != n.PeerID().String() {
		t.Errorf("Node with the token: %+v, %v", info, err)
	}
	var p *lmosproto.Problem
	if _, err := apiclient.New(base, nil).Node(context.Background()); !errors.As(err, &p) || p.Status != http.StatusUnauthorized {
		t.Errorf("Node without the token: %v, want a 401 problem", err)
	}
}

func TestAPITokenWebSocket(t *testing.T) {
	n, _ := tokenNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, path := range []string{"/ws", "/ws/agent"} {
		for _, auth := range []string{"", "Bearer nope"} {
			h := http.Header{}
			if auth != "" {
				h.Set("Authorization", auth)
			}
			c, resp, err := websocket.Dial(ctx, "ws://"+n.APIAddr()+path, &websocket.DialOptions{
				Subprotocols: []string{lmosproto.WebSocketSubprotocol}, HTTPHeader: h,
			})
			if err == nil {
				_ = c.CloseNow()
				t.Fatalf("%s with %q: upgraded without the token", path, auth)
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s with %q: %v, want 401 with a challenge", path, auth, resp)
			}
		}
		h := http.Header{"Authorization": {"Bearer " + testToken}}
		c, _, err := websocket.Dial(ctx, "ws://"+n.APIAddr()+path, &websocket.DialOptions{
			Subprotocols: []string{lmosproto.WebSocketSubprotocol}, HTTPHeader: h,
		})
		if err != nil {
			t.Fatalf("%s with the token: %v", path, err)
		}
		_ = c.CloseNow()
	}
}

// TestAPITokenConsumerTD: the TDs a token-protected node serves declare the
// bearer scheme, so that WoT consumers send the token.
func TestAPITokenConsumerTD(t *testing.T) {
	n, id := tokenNode(t)
	base := "http://" + n.APIAddr()
	for _, p := range []string{"/things/" + url.PathEscape(id) + "/td", "/.well-known/wot"} {
		resp, body := get(t, base+p, "Bearer "+testToken)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", p, resp.Status, body)
		}
		if err := lmosproto.ValidateTD(body); err != nil {
			t.Errorf("GET %s: not a valid TD: %v", p, err)
		}
		var td struct {
			Security            string                       `json:"security"`
			SecurityDefinitions map[string]map[string]string `json:"securityDefinitions"`
		}
		if err := json.Unmarshal(body, &td); err != nil {
			t.Fatal(err)
		}
		def := td.SecurityDefinitions["bearer_sc"]
		if td.Security != "bearer_sc" || def["scheme"] != "bearer" || def["in"] != "header" || def["name"] != "Authorization" || len(td.SecurityDefinitions) != 1 {
			t.Errorf("GET %s: security %q, definitions %v; want only bearer_sc, bearer in header Authorization", p, td.Security, td.SecurityDefinitions)
		}
	}
	// Without a token the same views declare nosec.
	plain := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	resp, body := get(t, "http://"+plain.APIAddr()+"/.well-known/wot", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"security":"nosec_sc"`) {
		t.Errorf("tokenless directory TD: %s %s", resp.Status, body)
	}
}

func TestConfigAPIToken(t *testing.T) {
	for _, tc := range []struct {
		name, api, token string
		wantErr          string // "" for valid; else a substring of the error
	}{
		{"loopback without token", "127.0.0.1:5080", "", ""},
		{"localhost without token", "localhost:5080", "", ""},
		{"loopback with token", "127.0.0.1:5080", testToken, ""},
		{"any address with token", "0.0.0.0:5080", testToken, ""},
		{"lan address with token", "192.0.2.10:5080", testToken + "+/._~-==", ""},
		{"ipv6 any with token", "[::]:5080", testToken, ""},
		{"any address without token", "0.0.0.0:5080", "", "config: apiToken: required when api is not a loopback address"},
		{"lan address without token", "192.0.2.10:5080", "", "config: apiToken: required"},
		{"short token", "0.0.0.0:5080", testToken[1:], "config: apiToken: 31 characters: must be at least 32"},
		{"short token on loopback", "127.0.0.1:5080", "secret", "config: apiToken: 6 characters"},
		{"token with space", "0.0.0.0:5080", testToken + " x", "config: apiToken: must use only"},
		{"token of padding", "0.0.0.0:5080", strings.Repeat("=", 40), "config: apiToken: must use only"},
		{"hostname", "example.com:5080", testToken, "config: api:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Home = "/tmp/x"
			cfg.API, cfg.APIToken = tc.api, tc.token
			err := cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want ok", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestLoadAPIToken(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.APITokenEnv, "") // unset below; Setenv restores it after the test
	if err := os.Unsetenv(config.APITokenEnv); err != nil {
		t.Fatal(err)
	}
	if tok, err := homedir.LoadAPIToken(home); err != nil || tok != "" {
		t.Errorf("home without config: %q, %v; want no token", tok, err)
	}
	cfg := config.Default()
	cfg.APIToken = testToken
	if err := config.Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(home, config.File))
	if err != nil || !strings.Contains(string(raw), `"apiToken": "`+testToken+`"`) {
		t.Fatalf("config.json lacks apiToken: %s %v", raw, err)
	}
	if tok, err := homedir.LoadAPIToken(home); err != nil || tok != testToken {
		t.Errorf("from config: %q, %v", tok, err)
	}
	env := strings.Repeat("e", 40)
	t.Setenv(config.APITokenEnv, env)
	if tok, err := homedir.LoadAPIToken(home); err != nil || tok != env {
		t.Errorf("from $%s: %q, %v", config.APITokenEnv, tok, err)
	}
	if cfg, err := config.Load(home); err != nil || cfg.APIToken != env {
		t.Errorf("LoadConfig with $%s: %q, %v", config.APITokenEnv, cfg.APIToken, err)
	}
}

// TestAPICORS: a node configured with an allowed origin answers a
// browser's preflight (which carries no Authorization header) without the
// token, and the requests of that origin with CORS headers, while the token
// guard stays; other origins get no CORS headers.
func TestAPICORS(t *testing.T) {
	const console = "http://console.example:3000"
	net := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.APIToken = testToken
		cfg.APICORS.AllowOrigins = []string{console}
	}})
	base := "http://" + net.Nodes[0].APIAddr()

	req, err := http.NewRequest(http.MethodOptions, base+"/things", nil)
	if err != nil {
		t.Fatal(err)
	}
	// What a browser sends before a fetch with a bearer token and a JSON body.
	req.Header.Set("Origin", console)
	req.Header.Set("Access-Control-Request-Method", "PUT")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != console ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %s, headers %v", resp.Status, resp.Header)
	}

	resp, _ = get(t, base+"/things", "Bearer "+testToken, "Origin", console)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != console ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Link") {
		t.Errorf("GET /things from %s: %s, headers %v", console, resp.Status, resp.Header)
	}
	resp, _ = get(t, base+"/things", "", "Origin", console)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != console {
		t.Errorf("GET /things from %s without the token: %s, Access-Control-Allow-Origin %q; want 401 the page can read",
			console, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, _ = get(t, base+"/things", "Bearer "+testToken, "Origin", "http://evil.example")
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("GET /things from another origin: Access-Control-Allow-Origin %q", got)
	}
}

// TestAPICORSWebSocket: a page of an allowed origin may open /ws of a
// loopback node without a token; a page of another origin may not.
func TestAPICORSWebSocket(t *testing.T) {
	const console = "http://console.example:3000"
	net := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.APICORS.AllowOrigins = []string{console}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for origin, want := range map[string]bool{console: true, "http://evil.example": false} {
		c, resp, err := websocket.Dial(ctx, "ws://"+net.Nodes[0].APIAddr()+"/ws", &websocket.DialOptions{
			Subprotocols: []string{lmosproto.WebSocketSubprotocol}, HTTPHeader: http.Header{"Origin": {origin}},
		})
		if err == nil {
			_ = c.CloseNow()
		}
		switch {
		case want && err != nil:
			t.Errorf("Origin %s: %v", origin, err)
		case !want && (err == nil || resp == nil || resp.StatusCode != http.StatusForbidden):
			t.Errorf("Origin %s: upgraded or not refused with 403 (%v, %v)", origin, resp, err)
		}
	}
}
