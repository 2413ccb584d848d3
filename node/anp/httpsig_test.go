package anp

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rfcKey is test-key-ed25519 of RFC 9421 Appendix B.1.4 (its JWK "d").
func rfcKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	seed, err := base64.RawURLEncoding.DecodeString("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU")
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// rfcRequest is test-request of RFC 9421 Appendix B.2.
func rfcRequest() *http.Request {
	body := `{"hello": "world"}`
	r := httptest.NewRequest(http.MethodPost, "http://example.com/foo?param=Value&Pet=dog", strings.NewReader(body))
	r.Header.Set("Date", "Tue, 20 Apr 2021 02:07:55 GMT")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Content-Digest", "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:")
	r.Header.Set("Content-Length", "18")
	return r
}

// TestSignRFC9421B26 signs RFC 9421's B.2.6 example (ed25519 is
// deterministic) and checks the signature base, Signature-Input and
// Signature the RFC prints.
func TestSignRFC9421B26(t *testing.T) {
	r := rfcRequest()
	p := SigParams{Components: []string{"date", "@method", "@path", "@authority", "content-type", "content-length"},
		Created: time.Unix(1618884473, 0), KeyID: "test-key-ed25519"}
	params := `("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
	base, err := SignatureBase(r, "https", p.Components, params)
	if err != nil {
		t.Fatal(err)
	}
	wantBase := `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ` + params
	if string(base) != wantBase {
		t.Fatalf("signature base:\n%s\nwant:\n%s", base, wantBase)
	}
	if err := Sign(r, "https", "sig-b26", p, rfcKey(t)); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get(HeaderSignatureInput); got != "sig-b26="+params {
		t.Errorf("Signature-Input %s", got)
	}
	want := "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
	if got := r.Header.Get(HeaderSignature); got != want {
		t.Errorf("Signature %s\nwant      %s", got, want)
	}
}

// TestVerifyRFC9421B26 verifies the RFC's own B.2.6 fields, and fails
// when a covered component changes.
func TestVerifyRFC9421B26(t *testing.T) {
	r := rfcRequest()
	r.Header.Set(HeaderSignatureInput, `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`)
	r.Header.Set(HeaderSignature, "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:")
	s, err := ReadSignature(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Label != "sig-b26" || s.Params.KeyID != "test-key-ed25519" || s.Params.Created.Unix() != 1618884473 {
		t.Fatalf("read %+v", s)
	}
	pub := rfcKey(t).Public().(ed25519.PublicKey)
	if err := s.Verify(r, "https", pub); err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "text/plain")
	if err := s.Verify(r, "https", pub); err == nil {
		t.Fatal("a changed content-type verified")
	}
}

// TestTargetURI checks @target-uri and @query of RFC 9421 §2.2.2, §2.2.7.
func TestTargetURI(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://www.example.com/path?param=value", nil)
	v, _ := componentValue(r, "https", "@target-uri")
	if v != "https://www.example.com/path?param=value" {
		t.Error(v)
	}
	v, _ = componentValue(r, "https", "@query")
	if v != "?param=value" {
		t.Error(v)
	}
	if _, err := componentValue(r, "https", "x-missing"); err == nil {
		t.Error("a missing field has a value")
	}
}

// TestContentDigestRFC9530 checks the RFC 9530 example: {"hello": "world"}
// and a LF, sha-256.
func TestContentDigestRFC9530(t *testing.T) {
	body := []byte("{\"hello\": \"world\"}\n")
	if got := ContentDigest(body); got != "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:" {
		t.Fatal(got)
	}
	if err := CheckContentDigest([]string{ContentDigest(body)}, body); err != nil {
		t.Fatal(err)
	}
	if err := CheckContentDigest([]string{ContentDigest(body)}, bytes.TrimSpace(body)); err == nil {
		t.Fatal("a different body matched")
	}
	if err := CheckContentDigest([]string{"md5=:AAAA:"}, body); err == nil {
		t.Fatal("no usable digest accepted")
	}
}
