package mqttgw

import (
	"context"
	"errors"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
)

// followSyncTimeout bounds one Sync that a change of the own Things
// started (broker round trips for the subscriptions of every own Thing).
const followSyncTimeout = 30 * time.Second

// Follow makes the gateway Sync whenever the node's own Things in dir
// change, until Close, so that a Thing published or removed is served or
// withdrawn on the broker at once rather than at the next periodic sync.
// It returns at once; the work runs on a goroutine the gateway owns.
func (g *Gateway) Follow(dir *directory.Directory) error {
	ok := g.goOwned(func() {
		first := true
		err := dir.FollowOwn(g.ctx, func([]directory.Entry, bool) {
			if first { // the initial list: Start's sync loop covers it
				first = false
				return
			}
			ctx, cancel := context.WithTimeout(g.ctx, followSyncTimeout)
			defer cancel()
			if err := g.Sync(ctx); err != nil && g.ctx.Err() == nil {
				g.log.Warn("sync things", "err", err)
			}
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			g.log.Warn("follow own things", "err", err)
		}
	})
	if !ok {
		return errors.New("mqttgw: Follow: gateway closed")
	}
	return nil
}
