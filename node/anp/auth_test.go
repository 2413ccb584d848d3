package anp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// testCaller is a DID with its key; keyOf answers for it alone (the
// resolver's part is node/did's, tested there and end to end in package
// node).
type testCaller struct {
	did  string
	key  ed25519.PrivateKey
	peer peer.ID
}

func newCaller(t *testing.T, did string) testCaller {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return testCaller{did: did, key: key, peer: p}
}

func (c testCaller) keyOf(_ context.Context, keyID string) (ed25519.PublicKey, error) {
	if keyID != c.did+"#key-1" {
		return nil, fmt.Errorf("%s: %w", keyID, ErrNoKey)
	}
	return c.key.Public().(ed25519.PublicKey), nil
}

// signedRequest is a POST to u with body signed by c the way ANP-02's
// example does.
func (c testCaller) signedRequest(t *testing.T, u, body string, created time.Time, nonce string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderContentDigest, ContentDigest([]byte(body)))
	p := SigParams{Components: []string{"@method", "@target-uri", "@authority", "content-digest"}, Created: created,
		Expires: created.Add(time.Minute), Nonce: nonce, KeyID: c.did + "#key-1"}
	if err := Sign(r, "http", "sig1", p, c.key); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAuthenticate(t *testing.T) {
	caller := newCaller(t, "did:wba:client.example:agents:alice")
	denied := newCaller(t, "did:wba:client.example:agents:mallory")
	_, nodeKey, _ := ed25519.GenerateKey(rand.Reader)
	keyOf := func(ctx context.Context, keyID string) (ed25519.PublicKey, error) {
		if strings.HasPrefix(keyID, denied.did) {
			return denied.keyOf(ctx, keyID)
		}
		return caller.keyOf(ctx, keyID)
	}
	auth := NewAuthenticator(keyOf, func(p peer.ID) bool { return p != denied.peer }, nodeKey, "did:wba:node.example", AuthConfig{})
	srv := httptest.NewServer(auth.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := interact.DIDCallerFrom(r.Context())
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %s", c.DID, c.Peer, interact.CallerFrom(r.Context()), b)
	})))
	defer srv.Close()
	u := srv.URL + "/things/echo/actions/say"
	now := time.Now()

	resp := do(t, caller.signedRequest(t, u, `{"a":1}`, now, "n1"))
	if resp.status != http.StatusOK || resp.body != caller.did+" "+caller.peer.String()+" "+caller.did+` {"a":1}` {
		t.Fatalf("signed request: %d %s", resp.status, resp.body)
	}
	info := resp.header.Get("Authentication-Info")
	tok, ok := strings.CutPrefix(info, `access_token="`)
	tok, _, _ = strings.Cut(tok, `"`)
	if !ok || !strings.Contains(info, `token_type="Bearer"`) {
		t.Fatalf("Authentication-Info %q", info)
	}
	r, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{}`))
	r.Header.Set("Authorization", "Bearer "+tok)
	if resp := do(t, r); resp.status != http.StatusOK || !strings.HasPrefix(resp.body, caller.did) {
		t.Fatalf("access token: %d %s", resp.status, resp.body)
	}

	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		status int
		code   string
	}{
		{"replayed nonce", func() *http.Request { return caller.signedRequest(t, u, `{"a":1}`, now, "n1") }, 401, "invalid_nonce"},
		{"old signature", func() *http.Request { return caller.signedRequest(t, u, `{}`, now.Add(-10*time.Minute), "n2") }, 401, "invalid_timestamp"},
		{"body changed", func() *http.Request {
			r := caller.signedRequest(t, u, `{"a":1}`, now, "n3")
			r.Body = io.NopCloser(strings.NewReader(`{"a":2}`))
			return r
		}, 401, "invalid_content_digest"},
		{"digest and body changed", func() *http.Request {
			r := caller.signedRequest(t, u, `{"a":1}`, now, "n4")
			r.Body = io.NopCloser(strings.NewReader(`{"a":2}`))
			r.Header.Set(HeaderContentDigest, ContentDigest([]byte(`{"a":2}`)))
			return r
		}, 401, "invalid_signature"},
		{"other path", func() *http.Request {
			r := caller.signedRequest(t, u, `{}`, now, "n5")
			r.URL.Path = "/things/echo/actions/other"
			return r
		}, 401, "invalid_signature"},
		{"unknown key", func() *http.Request {
			r := caller.signedRequest(t, u, `{}`, now, "n6")
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), "#key-1", "#key-2", 1))
			return r
		}, 401, "invalid_verification_method"},
		{"denied caller", func() *http.Request { return denied.signedRequest(t, u, `{}`, now, "n7") }, 403, "forbidden_did"},
		{"forged token", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			r.Header.Set("Authorization", "Bearer "+tok[:len(tok)-4]+"AAAA")
			return r
		}, 401, "invalid_access_token"},
	} {
		resp := do(t, tc.req())
		if resp.status != tc.status || !strings.Contains(resp.body, `"error":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.status, resp.body, tc.status, tc.code)
			continue
		}
		if ch := resp.header.Get("WWW-Authenticate"); tc.status == 401 &&
			(!strings.HasPrefix(ch, "DIDWba ") || !strings.Contains(ch, `error="`+tc.code+`"`) || !strings.Contains(ch, `nonce="`) ||
				resp.header.Get("Accept-Signature") == "") {
			t.Errorf("%s: challenge %q, Accept-Signature %q", tc.name, ch, resp.header.Get("Accept-Signature"))
		}
	}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, r *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}
