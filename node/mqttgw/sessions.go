package mqttgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// followUpQueue bounds the follow-ups waiting for one session.
const followUpQueue = 64

// liveSession is a running invocation that follow-ups can reach, by its
// MQTT v5 correlation data and by its LMOS correlationID.
type liveSession struct {
	keys  []string
	ready chan struct{} // closed once s is set
	s     interact.Session
	queue chan *inbound // follow-ups, in the order they arrived
	done  chan struct{} // closed when the invocation is over
}

// sessionKeys returns the keys under which a request is found: its v5
// correlation data and its envelope correlationID.
func sessionKeys(in *inbound, corr string) []string {
	var keys []string
	if len(in.correlation) > 0 {
		keys = append(keys, "d:"+string(in.correlation))
	}
	if corr != "" {
		keys = append(keys, "c:"+corr)
	}
	return keys
}

// register records an invocation with a response topic as reachable by
// follow-ups (nil for any other request). Its worker is started by serve.
func (g *Gateway) register(in *inbound) *liveSession {
	if in.bad != nil || in.req == nil || in.req.Type != proto.MsgInvokeAction || in.responseTopic == "" {
		return nil
	}
	ls := &liveSession{
		keys:  sessionKeys(in, in.req.Correlation()),
		ready: make(chan struct{}),
		queue: make(chan *inbound, followUpQueue),
		done:  make(chan struct{}),
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.goOwnedLocked(func() { g.work(ls) }) {
		return nil
	}
	for _, k := range ls.keys {
		if _, taken := g.sessions[k]; !taken {
			g.sessions[k] = ls
		}
	}
	return ls
}

// unregister makes an invocation unreachable and stops its worker (nil:
// nothing).
func (g *Gateway) unregister(ls *liveSession) {
	if ls == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range ls.keys {
		if g.sessions[k] == ls {
			delete(g.sessions, k)
		}
	}
	select {
	case <-ls.done:
	default:
		close(ls.done)
	}
}

// lookup finds the running invocation a follow-up names.
func (g *Gateway) lookup(in *inbound) *liveSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range sessionKeys(in, in.req.CorrelationID) {
		if ls, ok := g.sessions[k]; ok {
			return ls
		}
	}
	return nil
}

// followUp hands a follow-up to the worker of its invocation; it must not
// block (paho's callback).
func (g *Gateway) followUp(in *inbound) {
	ls := g.lookup(in)
	if ls == nil {
		g.answer(in, http.StatusNotFound, "Not Found",
			fmt.Sprintf("topic %q: no running invocation with this correlation (%s)", in.topic, in.req.Type))
		return
	}
	select {
	case ls.queue <- in:
	default:
		g.answer(in, http.StatusServiceUnavailable, "Service Unavailable",
			fmt.Sprintf("topic %q: %d follow-ups are waiting already", in.topic, followUpQueue))
	}
}

// answer publishes an error on a goroutine of its own, at most
// MaxInFlight such answers at once.
func (g *Gateway) answer(in *inbound, status int, title, detail string) {
	if in.responseTopic == "" {
		return
	}
	select {
	case g.rejecting <- struct{}{}:
	default:
		return
	}
	msg := errorFor(in, status, title, detail)
	if !g.goOwned(func() {
		defer func() { <-g.rejecting }()
		g.reply(g.ctx, in, msg)
	}) {
		<-g.rejecting
	}
}

// work passes the follow-ups of one invocation to its session, in order.
func (g *Gateway) work(ls *liveSession) {
	select {
	case <-ls.ready:
	case <-ls.done:
		return
	case <-g.ctx.Done():
		return
	}
	for {
		select {
		case <-ls.done:
			return
		case <-g.ctx.Done():
			return
		case in := <-ls.queue:
			g.send(ls, in)
		}
	}
}

// send passes one follow-up to the session; a failure is answered on the
// follow-up's response topic.
func (g *Gateway) send(ls *liveSession, in *inbound) {
	m := in.req
	m.CorrelationID = ls.s.Request().Correlation()
	ctx, cancel := context.WithTimeout(interact.WithCaller(g.ctx, g.caller), g.cfg.PublishTimeout)
	defer cancel()
	err := ls.s.Send(ctx, m)
	switch {
	case err == nil:
	case errors.Is(err, interact.ErrSessionClosed):
		g.reply(ctx, in, errorFor(in, http.StatusNotFound, "Not Found",
			fmt.Sprintf("topic %q: the invocation is over", in.topic)))
	case errors.Is(err, interact.ErrNotAccepted):
		g.reply(ctx, in, errorFor(in, http.StatusConflict, "Conflict",
			fmt.Sprintf("topic %q: %v", in.topic, err)))
	default:
		g.reply(ctx, in, errorFor(in, http.StatusBadRequest, "Bad Request",
			fmt.Sprintf("topic %q: %v", in.topic, err)))
	}
}

// closeSessions ends every running invocation (Close).
func (g *Gateway) closeSessions() {
	g.mu.Lock()
	var open []*liveSession
	for _, ls := range g.sessions {
		open = append(open, ls)
	}
	g.mu.Unlock()
	for _, ls := range open {
		select {
		case <-ls.ready:
			_ = ls.s.Close()
		default:
		}
	}
}
