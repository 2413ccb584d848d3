package groupsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/groups"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// joinRequest is the request frame of the join protocol.
type joinRequest struct {
	Token string `json:"token"`
}

// logAnswer is the answer frame of the join and sync protocols.
type logAnswer struct {
	Log    json.RawMessage `json:"log,omitempty"`
	Error  string          `json:"error,omitempty"`
	Status int             `json:"status,omitempty"`
}

// RefusedError is a join that an admin's node refused (or that this node
// refuses before asking: the token is for another peer). Status is the
// HTTP status that fits (403, 409 or 410).
type RefusedError struct {
	Status int
	By     peer.ID // "" when refused locally
	Reason string
}

func (e *RefusedError) Error() string {
	if e.By == "" {
		return fmt.Sprintf("join refused: %s", e.Reason)
	}
	return fmt.Sprintf("join refused by %s: %s", e.By, e.Reason)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// JoinResult is what Join did: the node joined (Info set) or the join is
// pending (no admin's node answered; it is retried in the background).
type JoinResult struct {
	Group   string
	Pending bool
	Info    *Info
}

// pendingJoin is a join waiting for an admin's node.
type pendingJoin struct {
	inv   *groups.Invitation
	token string
	kick  chan struct{}
}

func newPendingJoin(inv *groups.Invitation, token string) *pendingJoin {
	return &pendingJoin{inv: inv, token: token, kick: make(chan struct{}, 1)}
}

// PendingJoin describes a pending join.
type PendingJoin struct {
	Group   string    `json:"group"`
	Name    string    `json:"name"`
	Issuer  peer.ID   `json:"issuer"`
	Expires time.Time `json:"expires"`
}

// Pending returns the pending joins.
func (s *Service) Pending() []PendingJoin {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]PendingJoin, 0, len(s.pending))
	for _, pj := range s.pending {
		out = append(out, PendingJoin{Group: pj.inv.Group, Name: pj.inv.Name, Issuer: pj.inv.Issuer, Expires: pj.inv.Expires})
	}
	return out
}

// Join joins the group of the invitation token: it asks the issuer's node,
// then the other admins' nodes, to add this node. If an admin's node
// refuses, the error is a *RefusedError; if none answers, the join is
// pending (persisted and retried until an admin answers or the token
// expires) and Join returns a result with Pending set.
func (s *Service) Join(ctx context.Context, token string) (JoinResult, error) {
	if err := s.alive(); err != nil {
		return JoinResult{}, err
	}
	inv, err := groups.ParseInvitation(token, s.now())
	if err != nil {
		if errors.Is(err, groups.ErrExpired) {
			return JoinResult{}, &RefusedError{Status: http.StatusGone, Reason: err.Error()}
		}
		return JoinResult{}, fmt.Errorf("%w: token: %w", ErrBadRequest, err)
	}
	if g := s.get(inv.Group); g != nil && g.state().IsMember(s.self) {
		in := s.info(g, false)
		return JoinResult{Group: g.id, Info: &in}, nil
	}
	if inv.For != "" && inv.For != s.self {
		return JoinResult{}, &RefusedError{Status: http.StatusForbidden, Reason: fmt.Sprintf("the invitation is for %s, this node is %s", inv.For, s.self)}
	}
	tctx, cancel := context.WithTimeout(ctx, JoinWait)
	g, err := s.tryJoin(tctx, inv, token)
	cancel()
	var refused *RefusedError
	switch {
	case err == nil:
		s.dropPending(inv.ID)
		in := s.info(g, false)
		return JoinResult{Group: g.id, Info: &in}, nil
	case errors.As(err, &refused):
		return JoinResult{}, err
	case s.ctx.Err() != nil:
		return JoinResult{}, ErrClosed
	case ctx.Err() != nil:
		return JoinResult{}, ctx.Err()
	}
	s.log.Info("join pending: no admin reachable", "group", inv.Group, "issuer", inv.Issuer, "err", err)
	if err := s.addPending(inv, token); err != nil {
		return JoinResult{}, err
	}
	return JoinResult{Group: inv.Group, Pending: true}, nil
}

// tryJoin asks, in turn, the issuer at the token's addresses, the issuer
// found through the DHT, and the other admins of the group's DHT log. It
// returns the joined group, a *RefusedError, or the last network error.
func (s *Service) tryJoin(ctx context.Context, inv *groups.Invitation, token string) (*group, error) {
	tried := map[peer.ID]bool{}
	var lastErr error
	attempt := func(ai peer.AddrInfo) (*group, error, bool) {
		tried[ai.ID] = true
		g, err := s.askJoin(ctx, ai, inv, token)
		var refused *RefusedError
		if err == nil || errors.As(err, &refused) {
			return g, err, true
		}
		s.log.Debug("join attempt failed", "group", inv.Group, "admin", ai.ID, "err", err)
		lastErr = err
		return nil, nil, false
	}
	issuer := peer.AddrInfo{ID: inv.Issuer}
	for _, a := range inv.Addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			continue
		}
		if ai, err := peer.AddrInfoFromP2pAddr(m); err == nil && ai.ID == inv.Issuer {
			issuer.Addrs = append(issuer.Addrs, ai.Addrs...)
		}
	}
	if g, err, done := attempt(issuer); done {
		return g, err
	}
	if s.p.DHT == nil {
		return nil, lastErr
	}
	if ai, err := s.findPeer(ctx, inv.Issuer); err == nil {
		if g, err, done := attempt(ai); done {
			return g, err
		}
	}
	// The other admins, from the group's DHT log.
	l, err := s.fetchDHT(ctx, inv.Group)
	if err != nil {
		return nil, errors.Join(lastErr, err)
	}
	admins := l.State().Admins()
	slices.Sort(admins)
	for _, a := range admins {
		if tried[a] || a == s.self {
			continue
		}
		ai := peer.AddrInfo{ID: a}
		if s.p.Host.Network().Connectedness(a) != network.Connected {
			if found, err := s.findPeer(ctx, a); err == nil {
				ai = found
			}
		}
		if g, err, done := attempt(ai); done {
			return g, err
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no admin's node found")
	}
	return nil, lastErr
}

// findPeer looks p up in the DHT, briefly.
func (s *Service) findPeer(ctx context.Context, p peer.ID) (peer.AddrInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, JoinTimeout)
	defer cancel()
	return s.p.DHT.FindPeer(ctx, p)
}

// askJoin runs one join exchange with ai and adopts the log it answers.
func (s *Service) askJoin(ctx context.Context, ai peer.AddrInfo, inv *groups.Invitation, token string) (*group, error) {
	if ai.ID == s.self {
		return nil, errors.New("the admin is this node")
	}
	ctx, cancel := context.WithTimeout(ctx, JoinTimeout)
	defer cancel()
	if len(ai.Addrs) > 0 || s.p.Host.Network().Connectedness(ai.ID) != network.Connected {
		if err := s.p.Host.Connect(ctx, ai); err != nil {
			return nil, fmt.Errorf("connect %s: %w", ai.ID, err)
		}
	}
	req, err := json.Marshal(joinRequest{Token: token})
	if err != nil {
		return nil, err
	}
	ans, err := s.exchange(ctx, ai.ID, protocol.ID(groups.ProtocolJoin), req)
	if err != nil {
		return nil, err
	}
	if ans.Status == http.StatusTooManyRequests {
		return nil, fmt.Errorf("%s: %s", ai.ID, ans.Error) // tried again later
	}
	if ans.Error != "" {
		status := ans.Status
		if status != http.StatusGone && status != http.StatusConflict {
			status = http.StatusForbidden
		}
		return nil, &RefusedError{Status: status, By: ai.ID, Reason: truncate(ans.Error, 300)}
	}
	l, err := s.p.Ops.ParseLog(inv.Group, ans.Log)
	if err != nil {
		return nil, fmt.Errorf("log from %s: %w", ai.ID, err)
	}
	if !l.State().IsMember(s.self) {
		return nil, fmt.Errorf("log from %s: this node is not a member in it", ai.ID)
	}
	g, _, err := s.adopt(l)
	if err != nil {
		return nil, err
	}
	s.reconcile(g)
	s.log.Info("joined group", "group", g.id, "name", g.state().Name, "via", ai.ID)
	return g, nil
}

// exchange writes req on a new stream of proto to p and reads the answer.
func (s *Service) exchange(ctx context.Context, p peer.ID, proto protocol.ID, req []byte) (logAnswer, error) {
	var ans logAnswer
	st, err := s.p.Host.NewStream(network.WithAllowLimitedConn(ctx, "lmos-group"), p, proto)
	if err != nil {
		return ans, fmt.Errorf("open stream to %s: %w", p, err)
	}
	deadline, _ := ctx.Deadline()
	if err := st.SetDeadline(deadline); err != nil {
		_ = st.Reset()
		return ans, err
	}
	stop := context.AfterFunc(ctx, func() { _ = st.SetDeadline(time.Now()) })
	defer stop()
	if err := lmosproto.WriteFrame(st, req); err != nil {
		_ = st.Reset()
		return ans, fmt.Errorf("write request to %s: %w", p, err)
	}
	if err := st.CloseWrite(); err != nil {
		_ = st.Reset()
		return ans, fmt.Errorf("close write to %s: %w", p, err)
	}
	raw, err := lmosproto.ReadFrame(st, maxLogFrame)
	if err != nil {
		_ = st.Reset()
		return ans, fmt.Errorf("read answer of %s: %w", p, err)
	}
	_ = st.Close()
	if err := json.Unmarshal(raw, &ans); err != nil {
		return ans, fmt.Errorf("answer of %s: %w", p, err)
	}
	return ans, nil
}

// handleJoin answers a join request (the admin's side).
func (s *Service) handleJoin(st network.Stream) {
	remote := st.Conn().RemotePeer()
	ans := s.serveJoin(st, remote)
	if ans.Error != "" {
		s.log.Info("join refused", "peer", remote, "status", ans.Status, "reason", ans.Error)
	}
	writeAnswer(st, ans)
}

func (s *Service) serveJoin(st network.Stream, remote peer.ID) logAnswer {
	if err := st.SetDeadline(time.Now().Add(JoinTimeout)); err != nil {
		return logAnswer{Error: err.Error(), Status: http.StatusBadRequest}
	}
	if !s.serveLimit.Allow(remote) {
		return logAnswer{Error: "rate limited", Status: http.StatusTooManyRequests}
	}
	raw, err := lmosproto.ReadFrame(st, maxFrame)
	if err != nil {
		return logAnswer{Error: "read request: " + err.Error(), Status: http.StatusBadRequest}
	}
	var req joinRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return logAnswer{Error: "request: " + err.Error(), Status: http.StatusBadRequest}
	}
	now := s.now()
	inv, err := groups.ParseInvitation(req.Token, now)
	if errors.Is(err, groups.ErrExpired) {
		return logAnswer{Error: err.Error(), Status: http.StatusGone}
	}
	if err != nil {
		return logAnswer{Error: "token: " + err.Error(), Status: http.StatusBadRequest}
	}
	g := s.get(inv.Group)
	if g == nil {
		return logAnswer{Error: fmt.Sprintf("this node does not know group %s", inv.Group), Status: http.StatusForbidden}
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	state := g.state()
	switch {
	case state.Dissolved:
		return logAnswer{Error: ErrDissolved.Error(), Status: http.StatusConflict}
	case !state.IsAdmin(s.self):
		return logAnswer{Error: ErrNotAdmin.Error(), Status: http.StatusForbidden}
	case state.IsMember(remote):
		// A retry whose answer was lost: the peer is in already.
		return logAnswer{Log: g.log.Marshal()}
	}
	if err := g.log.CheckJoin(inv, remote, now); err != nil {
		status := http.StatusForbidden
		if errors.Is(err, groups.ErrExpired) || errors.Is(err, groups.ErrRevoked) || errors.Is(err, groups.ErrSpent) {
			status = http.StatusGone
		}
		return logAnswer{Error: err.Error(), Status: status}
	}
	ctx, cancel := context.WithTimeout(s.ctx, JoinTimeout)
	defer cancel()
	if _, err := s.commitLocked(ctx, g, groups.Draft{Kind: groups.KindAdd, Peer: remote, Role: inv.Role, Things: inv.Things, Invitation: inv}); err != nil {
		return logAnswer{Error: err.Error(), Status: http.StatusConflict}
	}
	s.log.Info("added member", "group", g.id, "peer", remote, "invitation", inv.ID)
	return logAnswer{Log: g.log.Marshal()}
}

// writeAnswer writes ans and closes the stream.
func writeAnswer(st network.Stream, ans logAnswer) {
	p, err := json.Marshal(ans)
	if err == nil {
		err = lmosproto.WriteFrame(st, p)
	}
	if err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// addPending persists a pending join and starts its retries.
func (s *Service) addPending(inv *groups.Invitation, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), DHTTimeout)
	defer cancel()
	if err := s.p.Datastore.Put(ctx, pendingKey(inv.ID), []byte(token)); err != nil {
		return fmt.Errorf("persist pending join: %w", err)
	}
	if err := s.p.Datastore.Sync(ctx, pendingKey(inv.ID)); err != nil {
		return fmt.Errorf("persist pending join: %w", err)
	}
	s.mu.Lock()
	if _, ok := s.pending[inv.ID]; ok {
		s.mu.Unlock()
		return nil
	}
	pj := newPendingJoin(inv, token)
	s.pending[inv.ID] = pj
	started := s.started
	s.mu.Unlock()
	if started {
		s.spawn(func() { s.retryPending(pj) })
	}
	return nil
}

// dropPending forgets a pending join.
func (s *Service) dropPending(id string) {
	s.mu.Lock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DHTTimeout)
	defer cancel()
	if err := s.p.Datastore.Delete(ctx, pendingKey(id)); err != nil {
		s.log.Warn("drop pending join", "invitation", id, "err", err)
	}
}

// retryPending retries pj with backoff, and at once when kicked, until it
// succeeds, is refused, expires, or the Service closes.
func (s *Service) retryPending(pj *pendingJoin) {
	delay := PendingRetryMin
	for {
		wait := min(delay, time.Until(pj.inv.Expires))
		t := time.NewTimer(max(wait, 0))
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-pj.kick:
			t.Stop()
		case <-t.C:
		}
		if !s.now().Before(pj.inv.Expires) {
			s.log.Info("pending join expired", "group", pj.inv.Group)
			s.dropPending(pj.inv.ID)
			return
		}
		if g := s.get(pj.inv.Group); g != nil && g.state().IsMember(s.self) {
			s.dropPending(pj.inv.ID)
			return
		}
		_, err := s.tryJoin(s.ctx, pj.inv, pj.token)
		var refused *RefusedError
		switch {
		case err == nil:
			s.log.Info("pending join completed", "group", pj.inv.Group)
			s.dropPending(pj.inv.ID)
			return
		case errors.As(err, &refused):
			s.log.Warn("pending join refused", "group", pj.inv.Group, "err", err)
			s.dropPending(pj.inv.ID)
			return
		case s.ctx.Err() != nil:
			return
		}
		s.log.Debug("pending join: no admin reachable yet", "group", pj.inv.Group, "err", err)
		delay = min(delay*2, PendingRetryMax)
	}
}

// kickPending retries at once the pending joins whose issuer is p.
func (s *Service) kickPending(p peer.ID) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, pj := range s.pending {
		if pj.inv.Issuer == p {
			select {
			case pj.kick <- struct{}{}:
			default:
			}
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
