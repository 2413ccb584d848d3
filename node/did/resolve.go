package did

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/singleflight"
)

// Options configure a Resolver; the zero value is usable.
type Options struct {
	// Client, if set, is the HTTP client used (its CheckRedirect and
	// Timeout are replaced by the resolver's). Otherwise one is built
	// from DialContext and RootCAs.
	Client *http.Client
	// DialContext dials the document's host; nil dials with a net.Dialer
	// that refuses loopback, private, link-local and unspecified
	// addresses (a DID names a public web host). Tests map a made-up
	// domain to 127.0.0.1 here.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs are the CAs trusted for the document's host; nil means the
	// system's.
	RootCAs *x509.CertPool
	// Timeout bounds one fetch, connection to last byte (default 10 s).
	Timeout time.Duration
	// MaxBytes bounds a document's size (default 256 KiB).
	MaxBytes int64
	// DefaultTTL is how long a document is cached when its response gives
	// no max-age (default 5 min); MinTTL and MaxTTL bound any lifetime
	// (defaults 1 min, 1 h); ErrorTTL is how long a failure is cached
	// (default 30 s).
	DefaultTTL, MinTTL, MaxTTL, ErrorTTL time.Duration
	// MaxEntries bounds the cache (default 1024 DIDs).
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultMaxBytes   = 256 << 10
	DefaultTTL        = 5 * time.Minute
	DefaultMinTTL     = time.Minute
	DefaultMaxTTL     = time.Hour
	DefaultErrorTTL   = 30 * time.Second
	DefaultMaxEntries = 1024
	maxRedirects      = 3
)

func (o *Options) fill() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.Timeout, DefaultTimeout)
	set(&o.DefaultTTL, DefaultTTL)
	set(&o.MinTTL, DefaultMinTTL)
	set(&o.MaxTTL, DefaultMaxTTL)
	set(&o.ErrorTTL, DefaultErrorTTL)
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Result is the outcome of one resolution, as cached.
type Result struct {
	Doc     *Document
	Err     error
	Expires time.Time
}

// Resolver resolves did:web and did:wba DIDs over HTTPS and caches the
// documents. It is safe for concurrent use.
type Resolver struct {
	opts   Options
	client *http.Client
	flight singleflight.Group

	mu       sync.Mutex
	cache    map[string]Result
	inFlight map[string]bool // Refresh's background fetches
	gen      atomic.Uint64   // counts the results stored

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewResolver returns a Resolver with opts (defaults filled in).
func NewResolver(opts Options) *Resolver {
	opts.fill()
	r := &Resolver{opts: opts, cache: map[string]Result{}, inFlight: map[string]bool{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if opts.Client != nil {
		c := *opts.Client
		r.client = &c
	} else {
		r.client = &http.Client{Transport: newTransport(opts)}
	}
	r.client.Timeout = opts.Timeout
	r.client.CheckRedirect = sameOrigin
	return r
}

// newTransport is the HTTPS transport of a resolver without a Client.
func newTransport(opts Options) *http.Transport {
	dial := opts.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: opts.Timeout, Control: refuseNonPublic}).DialContext
	}
	return &http.Transport{
		DialContext:           dial,
		TLSClientConfig:       &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// refuseNonPublic is the default dialer's check: a DID's host must be on
// the public internet.
func refuseNonPublic(_, address string, _ syscall.RawConn) error { return CheckPublic(address) }

// CheckPublic refuses an address ("ip:port") that is not on the public
// internet: loopback, private, link-local, multicast or unspecified. The
// default dialer of a Resolver applies it to every connection.
func CheckPublic(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("did: refusing to fetch a DID document from non-public address %s", host)
	}
	return nil
}

// sameOrigin follows a redirect only to the same host and port over HTTPS.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("did: more than %d redirects", maxRedirects)
	}
	if req.URL.Scheme != "https" || req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("did: redirect to %s leaves %s", req.URL.Redacted(), via[0].URL.Host)
	}
	return nil
}

// Resolve returns the document of a did:web or did:wba DID, from the cache
// while it is fresh, otherwise fetched (concurrent calls for one DID share
// one fetch). A failure is cached too, for ErrorTTL.
func (r *Resolver) Resolve(ctx context.Context, did string) (*Document, error) {
	if res, ok := r.Cached(did); ok {
		return res.Doc, res.Err
	}
	ch := r.flight.DoChan(did, func() (any, error) {
		res := r.fetch(r.ctx, did)
		r.store(did, res)
		return res, nil
	})
	select {
	case out := <-ch:
		res := out.Val.(Result)
		return res.Doc, res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cached returns the cached result for did without fetching, and false
// when none is cached or it has expired.
func (r *Resolver) Cached(did string) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.cache[did]
	if !ok || !r.opts.Now().Before(res.Expires) {
		return Result{}, false
	}
	return res, true
}

// Refresh resolves did in the background unless a fresh result is cached
// or a fetch is under way; Cached shows the result once it is in. Close
// stops it.
func (r *Resolver) Refresh(did string) {
	if _, ok := r.Cached(did); ok || r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	if r.inFlight[did] || r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.inFlight[did] = true
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		_, _ = r.Resolve(r.ctx, did)
		r.mu.Lock()
		delete(r.inFlight, did)
		r.mu.Unlock()
	}()
}

// Close cancels the fetches under way and waits for background ones.
func (r *Resolver) Close() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}

// store caches a result, dropping the entry that expires first when full.
func (r *Resolver) store(did string, res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cache[did]; !ok && len(r.cache) >= r.opts.MaxEntries {
		var oldest string
		for k, v := range r.cache {
			if oldest == "" || v.Expires.Before(r.cache[oldest].Expires) {
				oldest = k
			}
		}
		delete(r.cache, oldest)
	}
	r.cache[did] = res
	r.gen.Add(1)
}

// Generation counts the results the resolver has stored: a document
// rendered from its answers (an A2A card) is stale once it changes.
func (r *Resolver) Generation() uint64 { return r.gen.Load() }

// fetch resolves did over HTTPS; the result carries its expiry.
func (r *Resolver) fetch(ctx context.Context, did string) Result {
	now := r.opts.Now()
	fail := func(err error) Result { return Result{Err: err, Expires: now.Add(r.opts.ErrorTTL)} }
	id, err := Parse(did)
	if err != nil {
		return fail(err)
	}
	raw, ttl, err := r.get(ctx, id.URL())
	if err != nil {
		return fail(fmt.Errorf("resolve %s: %w", did, err))
	}
	doc, err := ParseDocument(did, raw)
	if err == nil {
		if fp, ok := id.E1Fingerprint(); ok && !doc.Deactivated {
			err = doc.checkE1Binding(fp)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("resolve %s: %w", did, err))
	}
	doc.Fetched, doc.Expires = now, now.Add(ttl)
	return Result{Doc: doc, Expires: doc.Expires}
}

// ErrTooLarge is wrapped by the error for a document over MaxBytes.
var ErrTooLarge = errors.New("did: document too large")

// get fetches url and returns the body and the cache lifetime its
// response allows.
func (r *Resolver) get(ctx context.Context, url string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/did+json, application/did+ld+json, application/json;q=0.9")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(body)) > r.opts.MaxBytes {
		return nil, 0, fmt.Errorf("GET %s: %w (over %d bytes)", url, ErrTooLarge, r.opts.MaxBytes)
	}
	return body, r.ttl(resp.Header.Get("Cache-Control")), nil
}

// ttl is the cache lifetime a Cache-Control header allows, within bounds.
func (r *Resolver) ttl(cc string) time.Duration {
	ttl := r.opts.DefaultTTL
	for _, d := range strings.Split(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
		switch name {
		case "no-store", "no-cache":
			return r.opts.MinTTL
		case "max-age":
			if n, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil && n >= 0 {
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(ttl, r.opts.MinTTL), r.opts.MaxTTL)
}
