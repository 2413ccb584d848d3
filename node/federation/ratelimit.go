package federation

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// maxLimiters bounds the peers a peerLimiter remembers; past it, the peers
// whose bucket is full again (idle long enough) are forgotten.
const maxLimiters = 4096

// peerLimiter is a token bucket per peer: a burst, then one event every
// interval. It is safe for concurrent use.
type peerLimiter struct {
	every rate.Limit
	burst int

	mu    sync.Mutex
	peers map[peer.ID]*rate.Limiter
}

func newPeerLimiter(every time.Duration, burst int) *peerLimiter {
	return &peerLimiter{every: rate.Every(every), burst: burst, peers: make(map[peer.ID]*rate.Limiter)}
}

// allow takes a token of p's bucket and reports whether there was one.
func (l *peerLimiter) allow(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.peers[p]
	if !ok {
		if len(l.peers) >= maxLimiters {
			l.forgetIdle()
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.peers[p] = lim
	}
	return lim.Allow()
}

// forgetIdle drops the buckets that are full: forgetting them changes
// nothing for their peers. The caller holds l.mu.
func (l *peerLimiter) forgetIdle() {
	for p, lim := range l.peers {
		if lim.Tokens() >= float64(l.burst) {
			delete(l.peers, p)
		}
	}
}
