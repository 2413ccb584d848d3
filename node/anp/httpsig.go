package anp

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// HTTP message signatures (RFC 9421) with Ed25519, the part ANP-02 uses:
// a request's Signature-Input and Signature fields, the signature base
// over derived components (@method, @target-uri, @authority, @scheme,
// @path, @query, @request-target) and header fields, and Content-Digest
// (RFC 9530). Structured fields (RFC 8941) are dunglas/httpsfv's.

// Header field names of ANP-02's signed requests.
const (
	HeaderSignatureInput = "Signature-Input"
	HeaderSignature      = "Signature"
	HeaderContentDigest  = "Content-Digest"
)

// SigParams are the parameters of one signature (RFC 9421 §2.3).
type SigParams struct {
	// Components are the covered components, in order ("@method",
	// "content-digest", …), lower case.
	Components []string
	// Created and Expires bound the signature's validity; Expires may be
	// zero.
	Created, Expires time.Time
	// KeyID names the key: in ANP a DID URL.
	KeyID string
	// Nonce, if set, makes the signature unique.
	Nonce string
	// Alg, if set, names the algorithm ("ed25519").
	Alg string
}

// innerList is p as the structured field of Signature-Input.
func (p SigParams) innerList() httpsfv.InnerList {
	il := httpsfv.InnerList{Params: httpsfv.NewParams()}
	for _, c := range p.Components {
		il.Items = append(il.Items, httpsfv.NewItem(c))
	}
	il.Params.Add("created", p.Created.Unix())
	if !p.Expires.IsZero() {
		il.Params.Add("expires", p.Expires.Unix())
	}
	if p.Nonce != "" {
		il.Params.Add("nonce", p.Nonce)
	}
	if p.Alg != "" {
		il.Params.Add("alg", p.Alg)
	}
	il.Params.Add("keyid", p.KeyID)
	return il
}

// Signed is one signature read from a request: its label, its
// parameters, the serialized parameters as signed, and the signature.
type Signed struct {
	Label     string
	Params    SigParams
	paramsSFV string
	Signature []byte
}

// SignatureBase builds the signature base of r (RFC 9421 §2.5) over the
// components of the inner list il, whose serialization is params. The
// target URI is rebuilt from r with scheme (the scheme the client used:
// "https" behind a TLS-terminating proxy).
func SignatureBase(r *http.Request, scheme string, components []string, params string) ([]byte, error) {
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, c := range components {
		if seen[c] {
			return nil, fmt.Errorf("component %q is covered twice", c)
		}
		seen[c] = true
		v, err := componentValue(r, scheme, c)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%q: %s\n", c, v)
	}
	fmt.Fprintf(&b, "%q: %s", "@signature-params", params)
	return b.Bytes(), nil
}

// componentValue is the value of one covered component of r.
func componentValue(r *http.Request, scheme, name string) (string, error) {
	switch name {
	case "@method":
		return r.Method, nil
	case "@authority":
		return strings.ToLower(r.Host), nil
	case "@scheme":
		return scheme, nil
	case "@target-uri":
		return scheme + "://" + strings.ToLower(r.Host) + requestTarget(r.URL), nil
	case "@request-target":
		return requestTarget(r.URL), nil
	case "@path":
		if p := r.URL.EscapedPath(); p != "" {
			return p, nil
		}
		return "/", nil
	case "@query":
		return "?" + r.URL.RawQuery, nil
	}
	if strings.HasPrefix(name, "@") {
		return "", fmt.Errorf("derived component %q is not supported", name)
	}
	if name != strings.ToLower(name) || name == "" {
		return "", fmt.Errorf("component %q: field names must be lower case", name)
	}
	vs, ok := r.Header[http.CanonicalHeaderKey(name)]
	if !ok && name == "content-length" && r.ContentLength >= 0 && r.Body != nil && r.Body != http.NoBody {
		// net/http keeps Content-Length out of the header map.
		return fmt.Sprint(r.ContentLength), nil
	}
	if !ok && name == "host" {
		return r.Host, nil
	}
	if !ok {
		return "", fmt.Errorf("covered field %q is not in the request", name)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.TrimSpace(v)
	}
	return strings.Join(out, ", "), nil
}

// requestTarget is the path and query of u as sent.
func requestTarget(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

// Sign signs r under label with key (Ed25519) over p.Components and sets
// its Signature-Input and Signature fields. The components must already
// be in r (Content-Digest: SetContentDigest).
func Sign(r *http.Request, scheme, label string, p SigParams, key ed25519.PrivateKey) error {
	il := p.innerList()
	params, err := httpsfv.Marshal(il)
	if err != nil {
		return fmt.Errorf("signature parameters: %w", err)
	}
	base, err := SignatureBase(r, scheme, p.Components, params)
	if err != nil {
		return err
	}
	in := httpsfv.NewDictionary()
	in.Add(label, il)
	sig := httpsfv.NewDictionary()
	sig.Add(label, httpsfv.NewItem(ed25519.Sign(key, base)))
	inS, err := httpsfv.Marshal(in)
	if err != nil {
		return err
	}
	sigS, err := httpsfv.Marshal(sig)
	if err != nil {
		return err
	}
	r.Header.Set(HeaderSignatureInput, inS)
	r.Header.Set(HeaderSignature, sigS)
	return nil
}

// ReadSignature reads the first signature of r's Signature-Input and its
// value in Signature. A request with several takes the first whose
// parameters name a keyid.
func ReadSignature(r *http.Request) (Signed, error) {
	inputs, err := httpsfv.UnmarshalDictionary(r.Header.Values(HeaderSignatureInput))
	if err != nil {
		return Signed{}, fmt.Errorf("field Signature-Input: %w", err)
	}
	sigs, err := httpsfv.UnmarshalDictionary(r.Header.Values(HeaderSignature))
	if err != nil {
		return Signed{}, fmt.Errorf("field Signature: %w", err)
	}
	for _, label := range inputs.Names() {
		m, _ := inputs.Get(label)
		il, ok := m.(httpsfv.InnerList)
		if !ok {
			return Signed{}, fmt.Errorf("field Signature-Input, %s: not an inner list", label)
		}
		p, err := paramsOf(il)
		if err != nil {
			return Signed{}, fmt.Errorf("field Signature-Input, %s: %w", label, err)
		}
		if p.KeyID == "" {
			continue
		}
		sm, ok := sigs.Get(label)
		if !ok {
			return Signed{}, fmt.Errorf("field Signature has no member %s", label)
		}
		item, ok := sm.(httpsfv.Item)
		sig, isBytes := item.Value.([]byte)
		if !ok || !isBytes {
			return Signed{}, fmt.Errorf("field Signature, %s: not a byte sequence", label)
		}
		ser, err := httpsfv.Marshal(il)
		if err != nil {
			return Signed{}, fmt.Errorf("field Signature-Input, %s: %w", label, err)
		}
		return Signed{Label: label, Params: p, paramsSFV: ser, Signature: sig}, nil
	}
	return Signed{}, errors.New("field Signature-Input names no keyid")
}

// paramsOf reads the parameters of a Signature-Input member.
func paramsOf(il httpsfv.InnerList) (SigParams, error) {
	var p SigParams
	for _, it := range il.Items {
		c, ok := it.Value.(string)
		if !ok {
			return p, errors.New("a covered component is not a string")
		}
		if len(it.Params.Names()) > 0 {
			return p, fmt.Errorf("component %q: parameters (sf, key, bs, req, tr) are not supported", c)
		}
		p.Components = append(p.Components, c)
	}
	for _, name := range il.Params.Names() {
		v, _ := il.Params.Get(name)
		var ok bool
		switch name {
		case "created", "expires":
			var n int64
			if n, ok = v.(int64); ok {
				t := time.Unix(n, 0)
				if name == "created" {
					p.Created = t
				} else {
					p.Expires = t
				}
			}
		case "keyid":
			p.KeyID, ok = v.(string)
		case "nonce":
			p.Nonce, ok = v.(string)
		case "alg":
			p.Alg, ok = v.(string)
		default:
			ok = true // tag and future parameters are signed, not read
		}
		if !ok {
			return p, fmt.Errorf("parameter %s has the wrong type", name)
		}
	}
	return p, nil
}

// Verify checks s's signature over r with pub.
func (s Signed) Verify(r *http.Request, scheme string, pub ed25519.PublicKey) error {
	if s.Params.Alg != "" && s.Params.Alg != "ed25519" {
		return fmt.Errorf("alg %q: only ed25519 is supported", s.Params.Alg)
	}
	base, err := SignatureBase(r, scheme, s.Params.Components, s.paramsSFV)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, base, s.Signature) {
		return errors.New("the signature does not verify")
	}
	return nil
}

// Covers reports whether s covers component c.
func (s Signed) Covers(c string) bool {
	for _, x := range s.Params.Components {
		if x == c {
			return true
		}
	}
	return false
}

// ContentDigest is the Content-Digest field value (RFC 9530) of body
// with sha-256.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// CheckContentDigest checks body against a Content-Digest field value:
// every sha-256 and sha-512 member must match and at least one must be
// there (other algorithms are ignored, RFC 9530 §2).
func CheckContentDigest(values []string, body []byte) error {
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return fmt.Errorf("field Content-Digest: %w", err)
	}
	checked := 0
	for _, alg := range d.Names() {
		var h hash.Hash
		switch alg {
		case "sha-256":
			h = sha256.New()
		case "sha-512":
			h = sha512.New()
		default:
			continue
		}
		m, _ := d.Get(alg)
		item, _ := m.(httpsfv.Item)
		want, ok := item.Value.([]byte)
		if !ok {
			return fmt.Errorf("field Content-Digest, %s: not a byte sequence", alg)
		}
		h.Write(body)
		if !bytes.Equal(h.Sum(nil), want) {
			return fmt.Errorf("field Content-Digest, %s: does not match the body", alg)
		}
		checked++
	}
	if checked == 0 {
		return errors.New("field Content-Digest has no sha-256 or sha-512 member")
	}
	return nil
}
