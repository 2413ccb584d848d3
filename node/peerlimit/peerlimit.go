// Package peerlimit is a token bucket per remote peer, for the requests a
// node answers (sync, join) and the work it starts per peer.
package peerlimit

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// maxPeers bounds the peers a Limiter remembers; past it, the peers whose
// bucket is full again (idle long enough) are forgotten.
const maxPeers = 4096

// Limiter is a token bucket per peer: a burst, then one event every
// interval. It is safe for concurrent use.
type Limiter struct {
	every rate.Limit
	burst int

	mu      sync.Mutex
	peers   map[peer.ID]*rate.Limiter
	refused int64 // Allow calls that found no token
}

// New returns a Limiter allowing each peer burst events at once, then one
// every interval.
func New(every time.Duration, burst int) *Limiter {
	return &Limiter{every: rate.Every(every), burst: burst, peers: make(map[peer.ID]*rate.Limiter)}
}

// Allow takes a token of p's bucket and reports whether there was one.
func (l *Limiter) Allow(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.peers[p]
	if !ok {
		if len(l.peers) >= maxPeers {
			l.forgetIdle()
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.peers[p] = lim
	}
	if !lim.Allow() {
		l.refused++
		return false
	}
	return true
}

// Refused returns how many events Allow refused so far.
func (l *Limiter) Refused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// forgetIdle drops the buckets that are full: forgetting them changes
// nothing for their peers. The caller holds l.mu.
func (l *Limiter) forgetIdle() {
	for p, lim := range l.peers {
		if lim.Tokens() >= float64(l.burst) {
			delete(l.peers, p)
		}
	}
}
