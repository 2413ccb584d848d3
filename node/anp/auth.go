package anp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// DID-WBA authentication (ANP-02 §3) of requests to the node's API.

// Defaults of an AuthConfig.
const (
	// DefaultWindow is how old a signature's created may be (ANP-02
	// recommends 1 to 5 minutes); a created up to DefaultSkew in the
	// future is accepted too (clocks differ).
	DefaultWindow = 5 * time.Minute
	DefaultSkew   = time.Minute
	// DefaultTokenTTL is the lifetime of the access token a verified
	// request gets.
	DefaultTokenTTL = time.Hour
	// DefaultMaxBody bounds the body read to check its Content-Digest.
	DefaultMaxBody = 4 << 20
	// maxReplay bounds the replay cache (signatures seen within the
	// window); past it a new signature is refused until old ones age out.
	maxReplay = 100_000
)

// acceptSignature is the Accept-Signature of a challenge: the components
// ANP-02 asks for.
const acceptSignature = `sig1=("@method" "@target-uri" "@authority" "content-digest");created;expires;nonce;keyid`

// KeyOf returns the Ed25519 key a DID URL (keyid) names, after resolving
// its DID (did:wba or did:web) and checking that the document authorizes
// the method for authentication; the composition root adapts node/did's
// Resolver to it. Its errors say why (ErrNoKey for a method not
// authorized; others for a DID that does not resolve).
type KeyOf func(ctx context.Context, keyID string) (ed25519.PublicKey, error)

// ErrNoKey is the error of a DID document that does not authorize the
// key a signature names for authentication.
var ErrNoKey = errors.New("the DID document does not authorize this key for authentication")

// Resolver resolves a did:wba or did:web DID to its document, checked as
// its method requires (node/did's Resolver).
type Resolver interface {
	Resolve(ctx context.Context, did string) (*did.Document, error)
}

// KeyOfResolver is the KeyOf that resolves with r: the method keyID
// names must carry an Ed25519 key and be in the document's
// authentication relationship (ANP-02 §3.2.1 step 5), and the document
// not deactivated.
func KeyOfResolver(r Resolver) KeyOf {
	return func(ctx context.Context, keyID string) (ed25519.PublicKey, error) {
		id, _, _ := strings.Cut(keyID, "#")
		doc, err := r.Resolve(ctx, id)
		if err != nil {
			return nil, err
		}
		m, ok := doc.Method(keyID)
		if !ok || m.PublicKey == nil || doc.Deactivated || !slices.Contains(doc.Authentication, m.ID) {
			return nil, fmt.Errorf("%s: %w", keyID, ErrNoKey)
		}
		return m.PublicKey, nil
	}
}

// AuthConfig configures an Authenticator. The zero value of every field
// selects its default.
type AuthConfig struct {
	Window, Skew, TokenTTL time.Duration
	MaxBody                int64
}

// Authenticator checks DID-WBA signed requests and the access tokens it
// issues. It is safe for concurrent use.
type Authenticator struct {
	keyOf  KeyOf
	admits func(peer.ID) bool
	key    ed25519.PrivateKey
	issuer string
	cfg    AuthConfig
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // replay cache: keyid and nonce (or signature) → expiry
}

// NewAuthenticator returns the Authenticator that resolves keys with
// keyOf, refuses (403) callers whose key's peer admits says no (the trust
// list's deny), and signs access tokens with key as issuer.
func NewAuthenticator(keyOf KeyOf, admits func(peer.ID) bool, key ed25519.PrivateKey, issuer string, cfg AuthConfig) *Authenticator {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Skew <= 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	return &Authenticator{keyOf: keyOf, admits: admits, key: key, issuer: issuer, cfg: cfg, now: time.Now, seen: map[string]time.Time{}}
}

// Carries reports whether r carries DID-WBA credentials: a signature
// (Signature-Input) or an access token this node issued.
func (a *Authenticator) Carries(r *http.Request) bool {
	if r.Header.Get(HeaderSignatureInput) != "" {
		return true
	}
	tok, ok := bearer(r)
	return ok && strings.Count(tok, ".") == 2 && a.readToken(tok) == nil
}

// authError is a refusal: its status (401, 403), error code (ANP-02
// §3.2.4.1) and description.
type authError struct {
	status      int
	code, descr string
}

func (e *authError) Error() string { return e.code + ": " + e.descr }

func refuse(code, format string, args ...any) *authError {
	return &authError{status: http.StatusUnauthorized, code: code, descr: fmt.Sprintf(format, args...)}
}

// Authenticate serves next the requests whose DID-WBA credentials verify,
// with the caller in their context (interact.WithDIDCaller, and the DID
// as the interactions' caller, interact.WithCaller); a signed request's
// answer carries an access token (Authentication-Info). Others get 401
// with the challenge, or 403 forbidden_did.
func (a *Authenticator) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c interact.DIDCaller
		var err error
		signed := r.Header.Get(HeaderSignatureInput) != ""
		if signed {
			c, err = a.verify(r)
		} else {
			c, err = a.token(r)
		}
		if err == nil && a.admits != nil && !a.admits(c.Peer) {
			err = &authError{status: http.StatusForbidden, code: "forbidden_did", descr: c.DID + " may not call this node (trust list)"}
		}
		var ae *authError
		if errors.As(err, &ae) {
			a.refuse(w, r, ae)
			return
		}
		if err != nil {
			a.refuse(w, r, refuse("invalid_request", "%v", err))
			return
		}
		if signed {
			if tok, err := a.issue(c); err == nil {
				w.Header().Set("Authentication-Info", fmt.Sprintf(`access_token="%s", token_type="Bearer", expires_in=%d`,
					tok, int(a.cfg.TokenTTL/time.Second)))
			}
		}
		ctx := interact.WithCaller(interact.WithDIDCaller(r.Context(), c), c.DID)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuse answers e: 401 with the challenge, or 403; the error mirrored
// in a JSON body (ANP-02 §4.2.2).
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, e *authError) {
	if e.status == http.StatusUnauthorized {
		a.Challenge(w.Header(), r, e.code, e.descr)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, e.status, map[string]any{"code": e.status, "error": e.code, "error_description": e.descr})
}

// Challenge adds the DIDWba challenge to h (ANP-02 §3.2.4.1): a
// WWW-Authenticate with a fresh nonce, and Accept-Signature. code is the
// error ("invalid_request" when r carried no credentials).
func (a *Authenticator) Challenge(h http.Header, r *http.Request, code, descr string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h.Add("WWW-Authenticate", fmt.Sprintf(`DIDWba realm=%q, error=%q, error_description=%q, nonce=%q`,
		r.Host, code, descr, base64.RawURLEncoding.EncodeToString(b[:])))
	h.Set("Accept-Signature", acceptSignature)
}

// verify checks r's signature (ANP-02 §3.2.1) and returns its caller.
func (a *Authenticator) verify(r *http.Request) (interact.DIDCaller, error) {
	s, err := ReadSignature(r)
	if err != nil {
		return interact.DIDCaller{}, refuse("invalid_request", "%v", err)
	}
	body, err := a.readBody(r)
	if err != nil {
		return interact.DIDCaller{}, err
	}
	hasBody := len(body) > 0
	for _, c := range []string{"@method", "@target-uri"} {
		if !s.Covers(c) {
			return interact.DIDCaller{}, refuse("invalid_request", "the signature does not cover %s", c)
		}
	}
	if hasBody && !s.Covers("content-digest") {
		return interact.DIDCaller{}, refuse("invalid_request", "the request has a body and the signature does not cover content-digest")
	}
	if hasBody || r.Header.Get(HeaderContentDigest) != "" {
		if err := CheckContentDigest(r.Header.Values(HeaderContentDigest), body); err != nil {
			return interact.DIDCaller{}, refuse("invalid_content_digest", "%v", err)
		}
	}
	if err := a.checkTime(s.Params); err != nil {
		return interact.DIDCaller{}, err
	}
	did, _, ok := strings.Cut(s.Params.KeyID, "#")
	if !ok || !strings.HasPrefix(did, "did:") {
		return interact.DIDCaller{}, refuse("invalid_did", "keyid %q is not a DID URL with a fragment", s.Params.KeyID)
	}
	pub, err := a.keyOf(r.Context(), s.Params.KeyID)
	if errors.Is(err, ErrNoKey) {
		return interact.DIDCaller{}, refuse("invalid_verification_method", "%v", err)
	}
	if err != nil {
		return interact.DIDCaller{}, refuse("invalid_did", "%v", err)
	}
	if err := s.Verify(r, schemeOf(r), pub); err != nil {
		return interact.DIDCaller{}, refuse("invalid_signature", "%v", err)
	}
	if err := a.fresh(s); err != nil {
		return interact.DIDCaller{}, err
	}
	p, err := lmosproto.PeerIDFromEd25519(pub)
	if err != nil {
		return interact.DIDCaller{}, refuse("invalid_verification_method", "%v", err)
	}
	return interact.DIDCaller{DID: did, Peer: p}, nil
}

// readBody reads r's body (at most MaxBody) and puts it back.
func (a *Authenticator) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, a.cfg.MaxBody+1))
	if err != nil {
		return nil, refuse("invalid_request", "reading the body: %v", err)
	}
	if int64(len(b)) > a.cfg.MaxBody {
		return nil, &authError{status: http.StatusRequestEntityTooLarge, code: "invalid_request", descr: fmt.Sprintf("the body is over %d bytes", a.cfg.MaxBody)}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// checkTime checks created and expires against the window.
func (a *Authenticator) checkTime(p SigParams) error {
	now := a.now()
	switch {
	case p.Created.IsZero():
		return refuse("invalid_request", "the signature has no created parameter")
	case p.Created.After(now.Add(a.cfg.Skew)):
		return refuse("invalid_timestamp", "created %d is in the future", p.Created.Unix())
	case now.Sub(p.Created) > a.cfg.Window:
		return refuse("invalid_timestamp", "created %d is more than %v ago", p.Created.Unix(), a.cfg.Window)
	case !p.Expires.IsZero() && !now.Before(p.Expires):
		return refuse("invalid_timestamp", "the signature expired at %d", p.Expires.Unix())
	}
	return nil
}

// fresh records s in the replay cache and refuses a signature seen
// before (its keyid with its nonce, or with its signature without one).
func (a *Authenticator) fresh(s Signed) error {
	key := s.Params.KeyID + " " + s.Params.Nonce
	if s.Params.Nonce == "" {
		key = s.Params.KeyID + " sig " + string(s.Signature)
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if exp, ok := a.seen[key]; ok && now.Before(exp) {
		return refuse("invalid_nonce", "this nonce (or signature) was used already")
	}
	if len(a.seen) >= maxReplay {
		for k, exp := range a.seen {
			if !now.Before(exp) {
				delete(a.seen, k)
			}
		}
		if len(a.seen) >= maxReplay {
			return refuse("invalid_nonce", "too many signatures in the window; try again")
		}
	}
	a.seen[key] = s.Params.Created.Add(a.cfg.Window + a.cfg.Skew)
	return nil
}

// schemeOf is the scheme the client used: https on a TLS connection or
// behind a TLS-terminating proxy that says so (X-Forwarded-Proto).
func schemeOf(r *http.Request) string {
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return "https"
	}
	return "http"
}

// tokenClaims are the access token's claims beside the registered ones:
// the peer ID of the key that signed the request.
type tokenClaims struct {
	jwt.Claims
	Peer string `json:"lmos:peer"`
}

// issue makes the access token of c.
func (a *Authenticator) issue(c interact.DIDCaller) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: a.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	now := a.now()
	return jwt.Signed(sig).Claims(tokenClaims{Claims: jwt.Claims{Issuer: a.issuer, Subject: c.DID,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(a.cfg.TokenTTL))}, Peer: c.Peer.String()}).Serialize()
}

// token checks r's access token and returns its caller.
func (a *Authenticator) token(r *http.Request) (interact.DIDCaller, error) {
	tok, ok := bearer(r)
	if !ok {
		return interact.DIDCaller{}, refuse("invalid_request", "no DID-WBA signature or access token")
	}
	var c tokenClaims
	if err := a.readTokenInto(tok, &c); err != nil {
		return interact.DIDCaller{}, refuse("invalid_access_token", "%v", err)
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, Time: a.now()}, 0); err != nil {
		return interact.DIDCaller{}, refuse("invalid_access_token", "%v", err)
	}
	p, err := peer.Decode(c.Peer)
	if err != nil || c.Subject == "" {
		return interact.DIDCaller{}, refuse("invalid_access_token", "the token names no caller")
	}
	return interact.DIDCaller{DID: c.Subject, Peer: p}, nil
}

func (a *Authenticator) readToken(tok string) error {
	var c tokenClaims
	return a.readTokenInto(tok, &c)
}

// readTokenInto verifies tok's signature (the node's key) into c.
func (a *Authenticator) readTokenInto(tok string, c *tokenClaims) error {
	t, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return err
	}
	return t.Claims(a.key.Public(), c)
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
