package fanout

import (
	"context"
	"net/http"
	"strconv"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// probe asks the owner, through remote, for at most Config.Probe, whether
// req fails there, and ends the consumer c with the owner's error if it
// does: a topic carries events only, so without it a subscriber to an
// event whose backend is broken would wait on a silent topic. Events the
// owner answers with are ignored (the topic delivers them), and so is an
// owner that cannot be reached or answers 503 (busy or stopping: the topic
// may still work). The probe runs on a goroutine the Fanout owns; it ends
// early when ctx (the subscriber) is done.
func (f *Fanout) probe(ctx context.Context, remote interact.Invoker, req *lmosproto.Message, c *consumer) {
	if remote == nil || f.cfg.Probe < 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.wg.Go(func() {
		pctx, cancel := context.WithTimeout(f.ctx, f.cfg.Probe)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		s, err := remote.Invoke(pctx, req.Clone())
		if err != nil {
			return
		}
		defer func() { _ = s.Close() }()
		for {
			select {
			case m, ok := <-s.Replies():
				if !ok {
					return
				}
				if m.Type != lmosproto.MsgError {
					continue
				}
				if status, _ := strconv.Atoi(m.Status); status == http.StatusServiceUnavailable || pctx.Err() != nil {
					return
				}
				m = m.Clone()
				m.CorrelationID = req.Correlation()
				f.mu.Lock()
				c.endLocked(m)
				f.mu.Unlock()
				return
			case <-pctx.Done():
				return
			}
		}
	})
}
