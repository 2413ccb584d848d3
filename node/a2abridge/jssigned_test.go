package a2abridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/a2abridge"
)

// a2aJSDir holds the scripts that run the A2A JavaScript SDK and jose.
var a2aJSDir = filepath.Join("..", "..", "scripts", "interop", "a2a")

// jsSigning is a request of scripts/interop/a2a/sign.mjs: sign card with
// a fresh key of alg by signer ("jose": jose and canonicalize; "sdk": the
// A2A JavaScript SDK's generateAgentCardSignature), kid and jku in the
// protected header.
type jsSigning struct {
	Signer string         `json:"signer"`
	Alg    string         `json:"alg"`
	Kid    string         `json:"kid"`
	JKU    string         `json:"jku,omitempty"`
	Card   map[string]any `json:"card"`
}

// jsSigned runs sign.mjs once for reqs and returns, for each, the signed
// card as served and the public key's JWKS.
func jsSigned(t *testing.T, reqs []jsSigning) []struct{ Card, JWKS json.RawMessage } {
	t.Helper()
	testnet.NPM(t, a2aJSDir)
	arg, _ := json.Marshal(reqs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "sign.mjs", string(arg))
	cmd.Dir = a2aJSDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sign.mjs: %v\n%s", err, errb.Bytes())
	}
	var res []struct{ Card, JWKS json.RawMessage }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != len(reqs) {
		t.Fatalf("sign.mjs printed %q: %v", out.Bytes(), err)
	}
	return res
}

// TestCheckCardJS: cards signed by signers independent of the node — jose
// with canonicalize, and the A2A JavaScript SDK — verify with a pinned
// key and with a jku on the card's https origin (a test CA on 127.0.0.1),
// also when the card has members the bridge does not model; a changed
// card does not.
func TestCheckCardJS(t *testing.T) {
	var jwks []byte
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) }))
	defer srv.Close()
	cl, err := a2abridge.NewClient(a2abridge.ClientConfig{}, a2abridge.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	card := map[string]any{"name": "Signed elsewhere", "description": "", "version": "1.0.0",
		"supportedInterfaces": []any{map[string]any{"url": "https://agent.invalid/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"provider":            map[string]any{"organization": "Elsewhere", "url": "https://elsewhere.invalid"},
		"capabilities":        map[string]any{"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
		"defaultInputModes":   []any{"text/plain"}, "defaultOutputModes": []any{"text/plain"},
		"skills": []any{map[string]any{"id": "echo", "name": "Echo", "description": "Echoes.", "tags": []any{"echo"}, "examples": []any{}}}}
	cardURL := srv.URL + "/.well-known/agent-card.json"
	reqs := []jsSigning{
		{Signer: "jose", Alg: "ES256", JKU: srv.URL + "/jwks.json"},
		{Signer: "jose", Alg: "EdDSA"},
		{Signer: "sdk", Alg: "EdDSA", JKU: srv.URL + "/jwks.json"},
		{Signer: "sdk", Alg: "ES256"},
	}
	for i := range reqs {
		reqs[i].Kid, reqs[i].Card = "key-1", card
	}
	signed := jsSigned(t, reqs)
	for i, tc := range reqs {
		t.Run(tc.Signer+" "+tc.Alg, func(t *testing.T) {
			raw, keys := signed[i].Card, signed[i].JWKS
			jwks = keys
			want := a2abridge.CardTrust{Status: a2abridge.CardVerified, Kid: "key-1", Key: tc.JKU}
			var pinned []jose.JSONWebKey
			if tc.JKU == "" { // no jku: the key is pinned
				var err error
				if pinned, err = a2abridge.ParseKeys(keys); err != nil {
					t.Fatal(err)
				}
				want.Key = "pinned"
			}
			if got := cl.CheckCard(context.Background(), raw, cardURL, pinned); got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			changed := []byte(strings.Replace(string(raw), "Echoes.", "Echoes twice.", 1))
			if got := cl.CheckCard(context.Background(), changed, cardURL, pinned); got.Status != a2abridge.CardUnverified {
				t.Fatalf("changed card: %+v", got)
			}
		})
	}
}
