package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Defaults of a DocConfig.
const (
	// DefaultDocEntries bounds the documents a DocCache holds: the
	// variants of a document (hosts the API is reached by, paths, pages).
	DefaultDocEntries = 64
	// DefaultDocBytes bounds the bytes of the documents a DocCache holds.
	DefaultDocBytes = 8 << 20
	// DocCacheControl is the Cache-Control of a cached document: a client
	// may keep it but asks again each time, with If-None-Match, and gets
	// 304 while the document is the same. A document rendered from the
	// directory changes with every Thing another node publishes, and a
	// revalidation costs the node a hash compare: there is no max-age to
	// serve a stale card for.
	DocCacheControl = "no-cache"
)

// DocConfig configures a DocCache. The zero value of every field selects
// its default.
type DocConfig struct {
	// MaxEntries: see DefaultDocEntries.
	MaxEntries int
	// MaxBytes: see DefaultDocBytes. A document longer than a quarter of
	// it is served but not kept (each document bounds its size itself;
	// this is the backstop).
	MaxBytes int
}

// DocCache serves documents that a node renders from data it holds, most
// of it remote (the A2A agent cards, the directory's TD), once per
// revision of that data instead of once per request. A handler it wraps
// renders the document; the cache keeps the 200 answer (body and
// headers) under the key and revision the request maps to, and answers
// the requests of the same key at the same revision with those bytes,
// with a strong ETag (a hash of the bytes), Cache-Control: no-cache
// (DocCacheControl) and 304 Not Modified to an If-None-Match that names
// it (http.ServeContent, which also answers HEAD and ranges). A hit costs
// a map lookup, the revision, and a write.
//
// Renders are one at a time per cache: a request that misses waits for
// the render in flight and takes its result when that render started
// after the request arrived (so it is not older than the request), else
// renders itself. So concurrent readers of a changed document render it
// once, and the memory of rendering is that of one document. Other
// answers (problems, redirects) pass through uncached. The cache holds at
// most MaxEntries documents and MaxBytes bytes, the least recently used
// dropped first. A DocCache is safe for concurrent use.
type DocCache struct {
	maxDoc int
	render chan struct{} // the one render in flight

	mu    sync.Mutex // guards docs, bytes
	docs  *simplelru.LRU[string, *cachedDoc]
	bytes int
	max   int

	started atomic.Uint64 // renders started; a cachedDoc's seq
}

// cachedDoc is a rendered document.
type cachedDoc struct {
	rev    string
	seq    uint64 // of the render that made it
	header http.Header
	body   []byte
}

// NewDocCache returns an empty DocCache.
func NewDocCache(cfg DocConfig) *DocCache {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultDocEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultDocBytes
	}
	c := &DocCache{maxDoc: cfg.MaxBytes / 4, max: cfg.MaxBytes, render: make(chan struct{}, 1)}
	// The size is positive, so NewLRU cannot fail.
	c.docs, _ = simplelru.NewLRU(cfg.MaxEntries, func(_ string, d *cachedDoc) { c.bytes -= len(d.body) })
	return c
}

// DocKey maps a request to the key of the document it reads (e.g. the
// base URL and path, since a document names this node's URLs) and the
// revision of the data the document is rendered from; ok false serves
// the request uncached. It is called for every request, so it must be
// cheap.
type DocKey func(r *http.Request) (key, rev string, ok bool)

// Handler serves render's answers through the cache (see DocCache).
func (c *DocCache) Handler(keyOf DocKey, render http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, rev, ok := keyOf(r)
		if !ok {
			render.ServeHTTP(w, r)
			return
		}
		seen := c.started.Load()
		if d := c.get(key); d != nil && d.rev == rev {
			d.serve(w, r)
			return
		}
		d, rec := c.renderOnce(r, key, seen, keyOf, render)
		switch {
		case d != nil:
			d.serve(w, r)
		case rec != nil:
			rec.replay(w)
		}
	})
}

// Renders returns how many times the cache rendered a document.
func (c *DocCache) Renders() uint64 { return c.started.Load() }

// renderOnce waits for the render in flight and returns the document of
// key if one started after the request arrived (its seq is above seen),
// else renders it: the document kept, or the answer recorded when it is
// not one to keep. Both are nil if the client left while it waited.
func (c *DocCache) renderOnce(r *http.Request, key string, seen uint64, keyOf DocKey, render http.Handler) (*cachedDoc, *recorder) {
	select {
	case c.render <- struct{}{}:
	case <-r.Context().Done():
		return nil, nil
	}
	defer func() { <-c.render }()
	// The revision before the render: a change during it changes the
	// revision the next request sees, which renders again.
	_, rev, _ := keyOf(r)
	if d := c.get(key); d != nil && (d.rev == rev || d.seq > seen) {
		return d, nil
	}
	seq := c.started.Add(1)
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	render.ServeHTTP(rec, r)
	if rec.status != http.StatusOK || rec.body.Len() > c.maxDoc {
		return nil, rec
	}
	h := rec.header.Clone()
	h.Del("Content-Length") // ServeContent sets it
	d := &cachedDoc{rev: rev, seq: seq, header: h, body: bytes.Clone(rec.body.Bytes())}
	sum := sha256.Sum256(d.body)
	d.header.Set("ETag", `"`+base64.RawURLEncoding.EncodeToString(sum[:18])+`"`)
	d.header.Set("Cache-Control", DocCacheControl)
	c.put(key, d)
	return d, nil
}

func (c *DocCache) get(key string) *cachedDoc {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, _ := c.docs.Get(key)
	return d
}

func (c *DocCache) put(key string, d *cachedDoc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs.Remove(key)
	c.docs.Add(key, d)
	c.bytes += len(d.body)
	for c.bytes > c.max && c.docs.Len() > 1 {
		c.docs.RemoveOldest()
	}
}

// serve answers r with d: 200, or 304 to an If-None-Match naming its
// ETag (and HEAD, ranges, If-Match) as http.ServeContent does.
func (d *cachedDoc) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range d.header {
		h[k] = v
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.body))
}

// recorder records the answer of a render.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if !rec.wroteHeader {
		rec.status, rec.wroteHeader = status, true
	}
}

func (rec *recorder) Write(p []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(p)
}

// replay writes the recorded answer to w.
func (rec *recorder) replay(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range rec.header {
		h[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}
