package did_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/did/didtest"
	"github.com/lmosnode/lmosnode/proto"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct{ did, url, domain string }{
		{"did:web:w3c-ccg.github.io", "https://w3c-ccg.github.io/.well-known/did.json", "w3c-ccg.github.io"},
		{"did:web:w3c-ccg.github.io:user:alice", "https://w3c-ccg.github.io/user/alice/did.json", "w3c-ccg.github.io"},
		{"did:web:example.com%3A3000", "https://example.com:3000/.well-known/did.json", "example.com"},
		{"did:wba:Example.COM", "https://example.com/.well-known/did.json", "example.com"},
		{"did:wba:example.com%3A3000:user:alice:e1_abc", "https://example.com:3000/user/alice/e1_abc/did.json", "example.com"},
	} {
		id, err := did.Parse(tc.did)
		if err != nil {
			t.Fatalf("%s: %v", tc.did, err)
		}
		if id.URL() != tc.url || id.Domain() != tc.domain {
			t.Errorf("%s: URL %s domain %s, want %s %s", tc.did, id.URL(), id.Domain(), tc.url, tc.domain)
		}
	}
	for _, bad := range []string{
		"did:wba:127.0.0.1", "did:web:127.0.0.1%3A8443", "did:wba:%5B::1%5D", "did:web:localhost",
		"did:web:example.com%3A0", "did:web:example.com%3A99999", "did:key:z6Mk", "did:web:example.com#key-1",
		"did:web:", "web:example.com", "did:web:exa_mple.com", "did:web:example.com:..", "did:wba:example.com:a%2Fb",
	} {
		if id, err := did.Parse(bad); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", bad, id)
		}
	}
}

// TestJWKThumbprint checks the RFC 7638 thumbprint against RFC 8037 A.3.
func TestJWKThumbprint(t *testing.T) {
	x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if got := did.JWKThumbprint(x); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("thumbprint %s", got)
	}
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// counted serves body at path and counts the requests.
func counted(srv *didtest.Server, path string, body []byte, cacheControl string) *atomic.Int32 {
	var n atomic.Int32
	srv.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		_, _ = w.Write(body)
	})
	return &n
}

func TestResolveListsKeysAndCaches(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	listed, _ := newKey(t)
	other, _ := newKey(t)
	id := srv.DID("web")
	body, err := did.NewDocument(id, []ed25519.PublicKey{listed})
	if err != nil {
		t.Fatal(err)
	}
	hits := counted(srv, "/.well-known/did.json", body, "public, max-age=120")
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	opts := srv.Options()
	opts.Now = clk.now
	r := did.NewResolver(opts)
	defer r.Close()

	doc, err := r.Resolve(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if vm, ok := doc.HasAssertionKey(listed); !ok || !strings.HasPrefix(vm, id+"#z6Mk") {
		t.Errorf("listed key: %q %v", vm, ok)
	}
	if _, ok := doc.HasAuthenticationKey(listed); !ok {
		t.Error("listed key is not an authentication key")
	}
	if _, ok := doc.HasAssertionKey(other); ok {
		t.Error("a key the document does not list is an assertion key")
	}
	if got := doc.Expires.Sub(doc.Fetched); got != 120*time.Second {
		t.Errorf("lifetime %v, want the max-age 120s", got)
	}
	_, _ = r.Resolve(context.Background(), id)
	clk.add(119 * time.Second)
	_, _ = r.Resolve(context.Background(), id)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d fetches within max-age, want 1", n)
	}
	clk.add(2 * time.Second)
	if _, ok := r.Cached(id); ok {
		t.Error("still cached after max-age")
	}
	_, _ = r.Resolve(context.Background(), id)
	if n := hits.Load(); n != 2 {
		t.Fatalf("%d fetches after max-age, want 2", n)
	}
}

func TestCacheLifetimeBounds(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	pub, _ := newKey(t)
	for i, tc := range []struct {
		cc   string
		want time.Duration
	}{
		{"", did.DefaultTTL},
		{"max-age=5", did.DefaultMinTTL},
		{"max-age=999999", did.DefaultMaxTTL},
		{"max-age=600", 10 * time.Minute},
		{"no-store", did.DefaultMinTTL},
		{"max-age=600, no-cache", did.DefaultMinTTL},
	} {
		id := srv.DID("web", fmt.Sprint("c", i))
		body, _ := did.NewDocument(id, []ed25519.PublicKey{pub})
		srv.Handle(fmt.Sprintf("/c%d/did.json", i), body, tc.cc)
		r := did.NewResolver(srv.Options())
		doc, err := r.Resolve(context.Background(), id)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.Expires.Sub(doc.Fetched); got != tc.want {
			t.Errorf("Cache-Control %q: lifetime %v, want %v", tc.cc, got, tc.want)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	pub, _ := newKey(t)
	other := didtest.NewServer(t, "other.example")
	good := func(id string) []byte { b, _ := did.NewDocument(id, []ed25519.PublicKey{pub}); return b }

	srv.Handle("/wrongid/did.json", good(srv.DID("web", "someone")), "")
	srv.Handle("/big/did.json", append(good(srv.DID("web", "big")), make([]byte, 300<<10)...), "")
	srv.HandleFunc("/away/did.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("https://other.example:%d/away/did.json", other.Port), http.StatusFound)
	})
	other.Handle("/away/did.json", good(srv.DID("web", "away")), "")
	srv.HandleFunc("/slow/did.json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv.HandleFunc("/redirected/did.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved/did.json", http.StatusMovedPermanently)
	})
	srv.Handle("/moved/did.json", good(srv.DID("web", "redirected")), "")

	opts := srv.Options()
	opts.Timeout = 300 * time.Millisecond
	r := did.NewResolver(opts)
	defer r.Close()
	ctx := context.Background()
	for _, c := range []struct{ path, want string }{
		{"wrongid", "is not the DID resolved"},
		{"big", did.ErrTooLarge.Error()},
		{"away", "leaves org.example"},
		{"slow", "Timeout"},
		{"missing", "404"},
	} {
		_, err := r.Resolve(ctx, srv.DID("web", c.path))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.path, err, c.want)
		}
	}
	if _, err := r.Resolve(ctx, srv.DID("web", "redirected")); err != nil {
		t.Errorf("a redirect within the host: %v", err)
	}
	if _, err := r.Resolve(ctx, "did:wba:127.0.0.1"); err == nil {
		t.Error("an IP address resolved")
	}
	// A failure is cached: the 404 is not asked again at once.
	res, ok := r.Cached(srv.DID("web", "missing"))
	if !ok || res.Err == nil {
		t.Errorf("the failure is not cached: %+v %v", res, ok)
	}
}

func TestDefaultDialerRefusesNonPublic(t *testing.T) {
	// No dial and no DNS: the default dialer's check, on addresses.
	for _, addr := range []string{"127.0.0.1:443", "10.1.2.3:443", "192.168.0.1:443", "[::1]:443", "169.254.1.1:443", "0.0.0.0:443"} {
		if err := did.CheckPublic(addr); err == nil {
			t.Errorf("%s: allowed", addr)
		}
	}
	if err := did.CheckPublic("93.184.215.14:443"); err != nil {
		t.Errorf("a public address: %v", err)
	}
}

func TestConcurrentResolvesShareOneFetch(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	pub, _ := newKey(t)
	id := srv.DID("wba")
	body, _ := did.NewDocument(id, []ed25519.PublicKey{pub})
	release := make(chan struct{})
	var n atomic.Int32
	srv.HandleFunc("/.well-known/did.json", func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		<-release
		_, _ = w.Write(body)
	})
	r := did.NewResolver(srv.Options())
	defer r.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Resolve(context.Background(), id); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	if got := n.Load(); got != 1 {
		t.Errorf("%d fetches for 8 concurrent resolves, want 1", got)
	}
}

func TestRefreshFillsCache(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	pub, _ := newKey(t)
	id := srv.DID("web")
	body, _ := did.NewDocument(id, []ed25519.PublicKey{pub})
	srv.Handle("/.well-known/did.json", body, "")
	r := did.NewResolver(srv.Options())
	defer r.Close()
	if _, ok := r.Cached(id); ok {
		t.Fatal("cached before any lookup")
	}
	r.Refresh(id)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if res, ok := r.Cached(id); ok {
			if res.Err != nil || res.Doc == nil {
				t.Fatalf("refresh: %+v", res)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Refresh did not fill the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDocumentForms(t *testing.T) {
	pub, _ := newKey(t)
	x := base64.RawURLEncoding.EncodeToString(pub)
	mb := strings.TrimPrefix(proto.DIDKey(pub), "did:key:")
	id := "did:web:org.example"
	raw := fmt.Sprintf(`{"id":%q,
	  "verificationMethod":[{"id":"#jwk","type":"JsonWebKey2020","controller":%q,"publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":%q}},
	    {"id":"#p256","type":"JsonWebKey2020","controller":%q,"publicKeyJwk":{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}}],
	  "authentication":[{"id":%q,"type":"Multikey","controller":%q,"publicKeyMultibase":%q}],
	  "assertionMethod":["#jwk","#p256"]}`, id, id, x, id, id+"#mk", id, mb)
	doc, err := did.ParseDocument(id, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if vm, ok := doc.HasAssertionKey(pub); !ok || vm != id+"#jwk" {
		t.Errorf("JWK assertion key: %q %v", vm, ok)
	}
	if vm, ok := doc.HasAuthenticationKey(pub); !ok || vm != id+"#mk" {
		t.Errorf("embedded multikey authentication: %q %v", vm, ok)
	}
	if m, ok := doc.Method("#p256"); !ok || m.PublicKey != nil {
		t.Errorf("P-256 method: %+v %v", m, ok)
	}
	deact := strings.Replace(raw, `"id":`, `"deactivated":true,"id":`, 1)
	doc, err = did.ParseDocument(id, []byte(deact))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.HasAssertionKey(pub); ok {
		t.Error("a deactivated DID authorises a key")
	}
}

// e1Document is the document of an e1_ path DID bound to pub, signed by
// signer (as method #key-1's key when listed).
func e1Document(t *testing.T, id string, pub ed25519.PublicKey, signer ed25519.PrivateKey) []byte {
	t.Helper()
	mb := strings.TrimPrefix(proto.DIDKey(pub), "did:key:")
	smb := strings.TrimPrefix(proto.DIDKey(signer.Public().(ed25519.PublicKey)), "did:key:")
	raw := fmt.Sprintf(`{"@context":["https://www.w3.org/ns/did/v1","https://w3id.org/security/data-integrity/v2","https://w3id.org/security/multikey/v1"],
	  "id":%q,"verificationMethod":[{"id":"%s#key-1","type":"Multikey","controller":%q,"publicKeyMultibase":%q},
	  {"id":"%s#key-2","type":"Multikey","controller":%q,"publicKeyMultibase":%q}],
	  "authentication":["%s#key-1"],"assertionMethod":["%s#key-1"]}`, id, id, id, mb, id, id, smb, id, id)
	vm := id + "#key-1"
	if !signer.Public().(ed25519.PublicKey).Equal(pub) {
		vm = id + "#key-2"
	}
	signed, err := proto.SignDocumentAs([]byte(raw), signer, vm, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func TestE1PathBinding(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	fp := "e1_" + did.JWKThumbprint(pub)
	good := srv.DID("wba", "agents", "billing", fp)
	srv.Handle("/agents/billing/"+fp+"/did.json", e1Document(t, good, pub, priv), "")
	wrongSigner := srv.DID("wba", "agents", "other", fp)
	srv.Handle("/agents/other/"+fp+"/did.json", e1Document(t, wrongSigner, pub, otherPriv), "")
	unsigned := srv.DID("wba", "agents", "unsigned", fp)
	b, _ := did.NewDocument(unsigned, []ed25519.PublicKey{pub})
	srv.Handle("/agents/unsigned/"+fp+"/did.json", b, "")

	r := did.NewResolver(srv.Options())
	defer r.Close()
	ctx := context.Background()
	doc, err := r.Resolve(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.HasAuthenticationKey(pub); !ok {
		t.Error("the binding key is not an authentication key")
	}
	if _, err := r.Resolve(ctx, wrongSigner); err == nil || !strings.Contains(err.Error(), "thumbprint") {
		t.Errorf("signed by another key of the document: %v", err)
	}
	if _, err := r.Resolve(ctx, unsigned); err == nil || !errors.Is(err, proto.ErrNoProof) {
		t.Errorf("no proof: %v", err)
	}
}
