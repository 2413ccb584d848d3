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

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/a2abridge"
)

// a2aJSDir holds the scripts that run the A2A JavaScript SDK and jose.
var a2aJSDir = filepath.Join("..", "..", "scripts", "interop", "a2a")

// jsSigned has scripts/interop/a2a/sign.mjs sign card with a fresh key by
// signer ("jose": jose and canonicalize; "sdk": the A2A JavaScript SDK's
// generateAgentCardSignature) and returns the signed card as served and
// the public key's JWKS.
func jsSigned(t *testing.T, signer, alg, kid, jku string, card map[string]any) (raw, jwks []byte) {
	t.Helper()
	testnet.NPM(t, a2aJSDir)
	arg, _ := json.Marshal(map[string]any{"signer": signer, "alg": alg, "kid": kid, "jku": jku, "card": card})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "sign.mjs", string(arg))
	cmd.Dir = a2aJSDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sign.mjs: %v\n%s", err, errb.Bytes())
	}
	var res struct{ Card, JWKS json.RawMessage }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("sign.mjs printed %q: %v", out.Bytes(), err)
	}
	return res.Card, res.JWKS
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
	for _, tc := range []struct{ signer, alg, jku string }{
		{"jose", "ES256", srv.URL + "/jwks.json"},
		{"jose", "EdDSA", ""},
		{"sdk", "EdDSA", srv.URL + "/jwks.json"},
		{"sdk", "ES256", ""},
	} {
		t.Run(tc.signer+" "+tc.alg, func(t *testing.T) {
			raw, keys := jsSigned(t, tc.signer, tc.alg, "key-1", tc.jku, card)
			jwks = keys
			var pinned []byte
			if tc.jku == "" {
				pinned = keys
			}
			pk, err := a2abridge.ParseKeys(keys)
			if err != nil {
				t.Fatal(err)
			}
			if pinned == nil {
				pk = nil
			}
			want := a2abridge.CardTrust{Status: a2abridge.CardVerified, Kid: "key-1", Key: "pinned"}
			if tc.jku != "" {
				want.Key = tc.jku
			}
			if got := cl.CheckCard(context.Background(), raw, cardURL, pk); got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			changed := []byte(strings.Replace(string(raw), "Echoes.", "Echoes twice.", 1))
			if got := cl.CheckCard(context.Background(), changed, cardURL, pk); got.Status != a2abridge.CardUnverified {
				t.Fatalf("changed card: %+v", got)
			}
		})
	}
}
