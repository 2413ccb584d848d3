package anp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzReadSignature feeds arbitrary Signature-Input, Signature and
// Content-Digest fields to the decoders: no panic, and a signature read
// has a keyid.
func FuzzReadSignature(f *testing.F) {
	f.Add(`sig1=("@method" "@target-uri" "content-digest");created=1618884473;keyid="did:wba:a.example#key-1";nonce="n"`,
		`sig1=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:`,
		`sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:`)
	f.Add(`sig1=("@method";req);created=1`, `sig1=:AA==:`, `sha-512=:AA==:, md5=:AA==:`)
	f.Add(`a=();keyid="x", b=("date")`, `b=?1`, `sha-256=1`)
	f.Fuzz(func(t *testing.T, input, sig, digest string) {
		r := httptest.NewRequest(http.MethodPost, "http://node.example/things/x/actions/y?q=1", nil)
		r.Header.Set(HeaderSignatureInput, input)
		r.Header.Set(HeaderSignature, sig)
		_ = CheckContentDigest([]string{digest}, []byte("body"))
		s, err := ReadSignature(r)
		if err != nil {
			return
		}
		if s.Params.KeyID == "" {
			t.Fatalf("read a signature without keyid: %+v", s)
		}
		_, _ = SignatureBase(r, "https", s.Params.Components, s.paramsSFV)
	})
}
