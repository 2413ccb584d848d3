package groupsvc

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"
)

// Limits of the requests this node answers, per remote peer: join and
// sync requests together.
const (
	// ServeBurst is how many requests a peer may make at once.
	ServeBurst = 32
	// ServeEvery is the sustained rate after the burst: one request every
	// ServeEvery.
	ServeEvery = 250 * time.Millisecond

	// maxLimiters bounds the peers whose buckets are kept.
	maxLimiters = 4096
)

// peerLimiter is a token bucket per peer.
type peerLimiter struct {
	mu    sync.Mutex
	peers map[peer.ID]*rate.Limiter
}

func newPeerLimiter() *peerLimiter {
	return &peerLimiter{peers: map[peer.ID]*rate.Limiter{}}
}

// allow takes a token of p's bucket and reports whether there was one.
func (l *peerLimiter) allow(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.peers[p]
	if !ok {
		if len(l.peers) >= maxLimiters {
			// Full buckets: forgetting them changes nothing for their peers.
			for q, ql := range l.peers {
				if ql.Tokens() >= ServeBurst {
					delete(l.peers, q)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(ServeEvery), ServeBurst)
		l.peers[p] = lim
	}
	return lim.Allow()
}
