package agora

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Target is the action of an agent that a conversation calls.
type Target struct {
	Publisher peer.ID
	ThingID   string
	Action    string
}

// Conversations keeps the LMOS conversations (streaming sessions) of a
// bridge: the Agora multi-round conversations and the AITP threads. Each
// has an id, hard to guess, and expires TTL after its last round; at
// most Max are kept, an expired one is dropped and its session cancelled
// (by a sweep every TTL/4, and when a new one opens or it is asked for).
// Safe for concurrent use.
type Conversations struct {
	invokers a2abridge.Invokers
	ttl      time.Duration
	max      int

	mu   sync.Mutex
	byID map[string]*Conversation

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewConversations returns a store of at most maxOpen conversations,
// each expiring ttl after its last round, calling agents with invokers.
func NewConversations(invokers a2abridge.Invokers, ttl time.Duration, maxOpen int) *Conversations {
	c := &Conversations{invokers: invokers, ttl: ttl, max: maxOpen, byID: map[string]*Conversation{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Go(c.sweepLoop)
	return c
}

// sweepLoop ends the sessions of expired conversations, every ttl/4 (at
// least every second), until Close.
func (c *Conversations) sweepLoop() {
	t := time.NewTicker(max(c.ttl/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.mu.Lock()
			c.sweepLocked(time.Now())
			c.mu.Unlock()
		case <-c.ctx.Done():
			return
		}
	}
}

// sweepLocked drops the conversations expired at now and ends their
// sessions.
func (c *Conversations) sweepLocked(now time.Time) {
	for id, cv := range c.byID {
		if cv.Expired(now) {
			delete(c.byID, id)
			cv.end()
		}
	}
}

// Close cancels every conversation's session and waits for their readers.
func (c *Conversations) Close() {
	c.cancel()
	c.wg.Wait()
}

// Open starts a conversation with target; its first round is the
// caller's (Round). It fails when Max conversations that have not
// expired are open.
func (c *Conversations) Open(target Target) (*Conversation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.sweepLocked(now)
	if len(c.byID) >= c.max {
		return nil, fmt.Errorf("%d conversations are open, the most this node keeps", c.max)
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand never fails on supported platforms
	cv := &Conversation{ID: hex.EncodeToString(id[:]), Target: target, store: c, expires: now.Add(c.ttl), changed: make(chan struct{})}
	c.byID[cv.ID] = cv
	return cv, nil
}

// Call invokes target once with input (no session) and returns its
// output chunks once the action ended.
func (c *Conversations) Call(ctx context.Context, target Target, input lmosproto.Value) ([]lmosproto.Value, error) {
	cv := &Conversation{Target: target, store: c, single: true, changed: make(chan struct{})}
	defer cv.end()
	out, err := cv.Round(ctx, input, true)
	if err == nil && cv.final && len(out) > 1 {
		out = out[len(out)-1:] // the final output, not the running statuses before it
	}
	return out, err
}

// Get returns the conversation id; an expired one is dropped and
// reported as expired.
func (c *Conversations) Get(id string) (cv *Conversation, expired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cv, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	if cv.Expired(time.Now()) {
		delete(c.byID, id)
		cv.end()
		return nil, true
	}
	return cv, false
}

// Conversation is one LMOS conversation with an action of an agent: a
// streaming session (invokeAction "stream": true) whose input chunks are
// the rounds' inputs and whose output chunks are their answers. When the
// action is not a session (it completes at once), the next round invokes
// it again.
type Conversation struct {
	ID     string
	Target Target
	store  *Conversations
	// Protocol tells that the rounds' bodies follow a protocol document
	// (set by the bridge that opened the conversation).
	Protocol bool
	// single makes each round one invocation, not a session.
	single bool

	round sync.Mutex // one round at a time

	mu      sync.Mutex
	expires time.Time
	sess    interactSession
	stop    context.CancelFunc
	pending []lmosproto.Value
	done    bool
	final   bool // the session completed with an output
	fail    error
	changed chan struct{} // closed and replaced on every change
}

// interactSession is the part of interact.Session a conversation uses.
type interactSession interface {
	Replies() <-chan *lmosproto.Message
	Send(ctx context.Context, m *lmosproto.Message) error
	Close() error
}

// Expires is when the conversation expires unless a round extends it.
func (cv *Conversation) Expires() time.Time {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	return cv.expires
}

// Expired reports whether the conversation has expired at now.
func (cv *Conversation) Expired(now time.Time) bool { return !now.Before(cv.Expires()) }

// Round sends input (none when absent) to the agent and returns the
// output chunks it sent since the last round, waiting for at least one
// or the end of the session; with end it ends the session's input and
// waits for its end. A failure of the agent (an error message, a failed
// or cancelled action) is a *lmosproto.Problem.
func (cv *Conversation) Round(ctx context.Context, input lmosproto.Value, end bool) ([]lmosproto.Value, error) {
	cv.round.Lock()
	defer cv.round.Unlock()
	cv.mu.Lock()
	cv.expires = time.Now().Add(cv.store.ttl)
	open := cv.sess != nil && !cv.done
	cv.mu.Unlock()
	switch {
	case open:
		if err := cv.send(ctx, input, end); err != nil {
			return nil, err
		}
	case !input.Present() && end && !cv.single:
		return nil, nil
	default:
		if err := cv.invoke(input); err != nil {
			return nil, err
		}
		if end && !cv.single {
			// The session's first answer (it accepted), then its end.
			first, err := cv.collect(ctx, false)
			if err != nil || cv.isDone() {
				return first, err
			}
			if err := cv.send(ctx, lmosproto.Value{}, true); err != nil {
				return first, err
			}
			rest, err := cv.collect(ctx, true)
			return append(first, rest...), err
		}
	}
	return cv.collect(ctx, end)
}

// isDone reports whether the session ended.
func (cv *Conversation) isDone() bool {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	return cv.done
}

// invoke opens the session with its first input.
func (cv *Conversation) invoke(input lmosproto.Value) error {
	t := cv.Target
	req := lmosproto.NewMessage(t.ThingID, lmosproto.MsgInvokeAction)
	req.Name, req.Input, req.Stream = t.Action, input, !cv.single
	req.CorrelationID = req.MessageID
	ctx, stop := context.WithCancel(cv.store.ctx)
	sess, err := cv.store.invokers.For(t.Publisher).Invoke(ctx, req)
	if err != nil {
		stop()
		return httpapi.Problemf(http.StatusBadGateway, "invoking action %q of agent %q: %v", t.Action, t.ThingID, err)
	}
	cv.mu.Lock()
	cv.sess, cv.stop, cv.done, cv.fail, cv.pending = sess, stop, false, nil, nil
	cv.mu.Unlock()
	cv.store.wg.Go(func() { cv.follow(sess, stop) })
	return nil
}

// send feeds input (streamInput) and, with end, streamEnd to the session.
func (cv *Conversation) send(ctx context.Context, input lmosproto.Value, end bool) error {
	cv.mu.Lock()
	sess := cv.sess
	cv.mu.Unlock()
	var err error
	if input.Present() && !input.IsNull() {
		err = sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamInput, Input: input})
	}
	if err == nil && end {
		err = sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamEnd})
	}
	if err != nil {
		return httpapi.Problemf(http.StatusConflict, "the session of action %q takes no input: %v", cv.Target.Action, err)
	}
	return nil
}

// collect waits for at least one output chunk (all with end) or the
// end of the session and takes the chunks.
func (cv *Conversation) collect(ctx context.Context, end bool) ([]lmosproto.Value, error) {
	for {
		cv.mu.Lock()
		ready := cv.done || (!end && len(cv.pending) > 0)
		if ready {
			out, fail := cv.pending, cv.fail
			cv.pending = nil
			cv.mu.Unlock()
			return out, fail
		}
		changed := cv.changed
		cv.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, httpapi.Problemf(http.StatusGatewayTimeout, "agent %q sent no answer in time: %v", cv.Target.ThingID, ctx.Err())
		}
	}
}

// follow records the replies of sess until it ends.
func (cv *Conversation) follow(sess interactSession, stop context.CancelFunc) {
	defer stop()
	defer func() { _ = sess.Close() }()
	for {
		select {
		case m, ok := <-sess.Replies():
			if !ok {
				cv.apply(nil)
				return
			}
			if cv.apply(m) {
				return
			}
		case <-cv.store.ctx.Done():
			cv.apply(&lmosproto.Message{Type: lmosproto.MsgError, Status: "503", Title: "Service Unavailable", Detail: "the node is shutting down"})
			return
		}
	}
}

// apply records reply m (nil: the session ended without a final status)
// and reports whether it ended the session.
func (cv *Conversation) apply(m *lmosproto.Message) bool {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if cv.done {
		return true
	}
	defer func() { close(cv.changed); cv.changed = make(chan struct{}) }()
	switch {
	case m == nil:
		cv.done, cv.fail = true, httpapi.Problemf(http.StatusBadGateway, "the agent's session ended without a final status")
	case m.Type == lmosproto.MsgError:
		cv.done, cv.fail = true, m.Problem()
	case m.Type != lmosproto.MsgActionStatus:
	case m.Status == lmosproto.ActionRunning || m.Status == lmosproto.ActionCompleted:
		if m.Output.Present() {
			cv.pending = append(cv.pending, m.Output)
		}
		cv.done = m.Status == lmosproto.ActionCompleted
		cv.final = cv.done && m.Output.Present()
	case m.Status == lmosproto.ActionCancelled:
		cv.done, cv.fail = true, httpapi.Problemf(http.StatusConflict, "the action was cancelled")
	case m.Status != lmosproto.ActionPending: // failed
		cv.done, cv.fail = true, httpapi.Problemf(http.StatusBadGateway, "the action failed: %s", m.Output.String())
	}
	return cv.done
}

// end cancels the conversation's session.
func (cv *Conversation) end() {
	cv.mu.Lock()
	stop := cv.stop
	cv.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// ProblemOf is err as a problem.
func ProblemOf(err error) *lmosproto.Problem {
	var p *lmosproto.Problem
	if errors.As(err, &p) {
		return p
	}
	return httpapi.Problemf(http.StatusInternalServerError, "%v", err)
}
