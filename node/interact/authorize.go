package interact

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// Authorization of calls to Things restricted to groups.
//
// A Thing whose TD names lmos:groups may be called only by the members of
// those groups (docs/groups.md, "Enforcement"). The Engine does not know
// groups: it asks EngineDeps.Authorize for every request that opens an
// interaction with such a Thing, and again for every running one when
// Reauthorize is called after a membership change. A refused request is
// answered, and a running interaction ended, with a 403 Forbidden error
// message; every transport carries it unchanged (the HTTP binding answers
// 403).
//
// Who calls is in the request's context: the libp2p Server marks the
// authenticated remote peer with WithRemotePeer. Nothing else sets it, so a
// request without a remote peer comes through the node's own API (HTTP,
// WebSocket, MQTT, an embedding program) and is the owner's.

// AuthorizeFunc decides whether the consumer of req may interact with the
// Thing td, whose TD names lmos:groups. ctx carries the request's values
// (RemotePeerFrom, CallerFrom) but may be cancelled or outlive the request:
// the Engine calls it again from Reauthorize. It returns nil to allow. A
// *proto.Problem it returns answers the request as it is; any other error
// is a 403 Forbidden naming the Thing and its groups, with the error as the
// reason. It must not call the Engine.
type AuthorizeFunc func(ctx context.Context, td *proto.TD, req *proto.Message) error

// TitleForbidden is the title of a refused call to a group-scoped Thing
// (403).
const TitleForbidden = "Forbidden"

// ErrForbidden is the error an AuthorizeFunc may return when the caller is
// not a member of any of the Thing's groups.
var ErrForbidden = errors.New("the caller is not a member of any of these groups")

type remotePeerKey struct{}

// WithRemotePeer returns ctx marked with the authenticated remote peer on
// whose behalf a request arrived over libp2p. Only the libp2p Server sets
// it: a request without it comes from the node's own API.
func WithRemotePeer(ctx context.Context, p peer.ID) context.Context {
	return context.WithValue(ctx, remotePeerKey{}, p)
}

// RemotePeerFrom returns the remote peer WithRemotePeer put into ctx, and
// false if there is none (a call through the node's own API).
func RemotePeerFrom(ctx context.Context) (peer.ID, bool) {
	p, ok := ctx.Value(remotePeerKey{}).(peer.ID)
	return p, ok && p != ""
}

// authorize asks EngineDeps.Authorize whether req may run on td; nil if td
// names no groups or no hook is set. The error is the problem to answer
// with.
func (e *Engine) authorize(ctx context.Context, td *proto.TD, req *proto.Message) error {
	if e.auth == nil || td == nil || len(td.Groups) == 0 {
		return nil
	}
	err := e.auth(ctx, td, req)
	if err == nil {
		return nil
	}
	var p *proto.Problem
	if errors.As(err, &p) {
		return p
	}
	return problem(http.StatusForbidden, TitleForbidden, "Thing %q is restricted to the groups %s: %v",
		td.ID, strings.Join(td.Groups, ", "), err)
}

// Reauthorize checks every running subscription, observation, invocation
// and streaming session of a Thing that names lmos:groups against
// EngineDeps.Authorize again, with the Thing's current TD, and ends those it
// refuses with its 403 error message (an invocation's backend call is
// cancelled; the consumer gets the error as the final message). The node
// calls it after every membership change. It does nothing without
// EngineDeps.Authorize, and must not be called while holding a lock the hook
// takes.
func (e *Engine) Reauthorize() {
	if e.auth == nil {
		return
	}
	type check struct {
		ctx  context.Context
		req  *proto.Message
		sub  *subscription
		inv  *interaction
		deny error
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	checks := make([]check, 0, len(e.subs)+len(e.actions))
	for _, s := range e.subs {
		checks = append(checks, check{ctx: s.authCtx, req: s.req, sub: s})
	}
	for _, i := range e.actions {
		checks = append(checks, check{ctx: i.authCtx, req: i.req, inv: i})
	}
	e.mu.Unlock()

	// The hook and the TDs are asked without the engine's lock.
	tds := map[string]*proto.TD{}
	var refused []check
	for _, c := range checks {
		if c.inv != nil && c.inv.isFinished() {
			continue
		}
		td, seen := tds[c.req.ThingID]
		if !seen {
			td, _ = e.things.TD(c.req.ThingID)
			tds[c.req.ThingID] = td
		}
		if td == nil {
			continue // removed: the Thing's removal ends it otherwise
		}
		if c.deny = e.authorize(c.ctx, td, c.req); c.deny != nil {
			refused = append(refused, c)
		}
	}
	for _, c := range refused {
		e.log.Info("interaction no longer authorized", "request", c.req, "reason", c.deny)
		if c.sub != nil {
			e.mu.Lock()
			e.endSubLocked(c.sub, errorMessage(c.sub.req, c.deny))
			e.mu.Unlock()
			continue
		}
		// The backend's context ends with the problem as its cause; the
		// final message is that error (see finalFor).
		c.inv.actCancel(c.deny)
	}
}

// DIDCaller is a caller authenticated by a DID (ANP's DID-WBA signed
// HTTP requests, package anp): its DID and the peer ID of the Ed25519 key
// that signed, which is how group membership and the trust list know it.
type DIDCaller struct {
	DID  string
	Peer peer.ID
}

type didCallerKey struct{}

// WithDIDCaller returns ctx marked with a caller that the node's API
// authenticated by its DID: the owner's access decision (own) treats the
// call as that caller's, not the owner's. Only the API's DID-WBA check
// sets it.
func WithDIDCaller(ctx context.Context, c DIDCaller) context.Context {
	return context.WithValue(ctx, didCallerKey{}, c)
}

// DIDCallerFrom returns the caller WithDIDCaller put into ctx, and false
// if there is none.
func DIDCallerFrom(ctx context.Context) (DIDCaller, bool) {
	c, ok := ctx.Value(didCallerKey{}).(DIDCaller)
	return c, ok && c.Peer != ""
}
