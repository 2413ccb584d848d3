package did

import (
	"crypto/ed25519"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// Organization is what a user is shown beside a publisher whose TD claims
// an organisation (lmos:organization): the DID, its domain, and whether
// the organisation's DID document lists the publisher's key. An
// unverified claim is never to be shown as the domain alone.
type Organization struct {
	// DID is the organisation DID the TD claims.
	DID string `json:"did"`
	// Domain is the DID's host ("" when the DID does not parse).
	Domain string `json:"domain,omitempty"`
	// Verified is set when the DID's document lists the publisher's key
	// in assertionMethod.
	Verified bool `json:"verified"`
	// Reason says why the claim is not verified: ReasonPending while
	// the document is being fetched, otherwise the failure.
	Reason string `json:"reason,omitempty"`
}

// ReasonPending is Organization.Reason while the organisation's document
// has not been resolved yet.
const ReasonPending = "pending"

// String is the claim as a user reads it: the domain when verified,
// "unverified <did> (<reason>)" otherwise.
func (o Organization) String() string {
	if o.Verified {
		return o.Domain
	}
	return "unverified " + o.DID + " (" + o.Reason + ")"
}

// Organization checks, without waiting on the network, whether the
// document of the organisation DID claim lists pub in assertionMethod. A
// claim not in the cache is resolved in the background (Refresh) and
// reported unverified with ReasonPending until then.
func (r *Resolver) Organization(claim string, pub ed25519.PublicKey) Organization {
	o := Organization{DID: claim}
	id, err := Parse(claim)
	if err != nil {
		o.Reason = err.Error()
		return o
	}
	o.Domain = id.Domain()
	res, ok := r.Cached(claim)
	if !ok {
		r.Refresh(claim)
		o.Reason = ReasonPending
		return o
	}
	switch {
	case res.Err != nil:
		o.Reason = res.Err.Error()
	case res.Doc.Deactivated:
		o.Reason = "the organisation's DID is deactivated"
	default:
		if _, listed := res.Doc.HasAssertionKey(pub); listed {
			o.Verified = true
		} else {
			o.Reason = "the organisation's DID document does not list the publisher's key (" + proto.DIDKey(pub) + ") in assertionMethod"
		}
	}
	return o
}

// Members remembers the organisation each publisher claims (the
// lmos:organization of its latest TD) and answers, from the resolver's
// cache, which publishers are verified members. It is safe for concurrent
// use.
type Members struct {
	r *Resolver

	mu     sync.RWMutex
	claims map[peer.ID]string
}

// NewMembers returns an empty Members over r.
func NewMembers(r *Resolver) *Members {
	return &Members{r: r, claims: map[peer.ID]string{}}
}

// maxClaims bounds the publishers Members remembers.
const maxClaims = 1 << 16

// Note records that publisher p's TD claims organisation claim ("" for
// none) and starts resolving it in the background if needed.
func (m *Members) Note(p peer.ID, claim string) {
	m.mu.Lock()
	if claim == "" {
		delete(m.claims, p)
	} else if _, known := m.claims[p]; known || len(m.claims) < maxClaims {
		m.claims[p] = claim
	}
	m.mu.Unlock()
	if claim != "" {
		if _, ok := m.r.Cached(claim); !ok {
			m.r.Refresh(claim)
		}
	}
}

// Forget drops what is known of p.
func (m *Members) Forget(p peer.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.claims, p)
}

// Of returns the organisation shown beside publisher p for a TD that
// claims claim: nil when it claims none.
func (m *Members) Of(p peer.ID, claim string) *Organization {
	if m == nil || claim == "" {
		return nil
	}
	m.mu.RLock()
	known := m.claims[p] == claim
	m.mu.RUnlock()
	if !known {
		m.Note(p, claim)
	}
	pub, err := proto.Ed25519FromPeerID(p)
	if err != nil {
		return &Organization{DID: claim, Reason: err.Error()}
	}
	o := m.r.Organization(claim, pub)
	return &o
}

// Generation is the resolver's Generation: what Of answers may have
// changed since it was last read.
func (m *Members) Generation() uint64 {
	if m == nil {
		return 0
	}
	return m.r.Generation()
}

// Verified returns the organisation p is a verified member of, by its
// latest claim, and false when it claims none or the claim does not (yet)
// verify.
func (m *Members) Verified(p peer.ID) (Organization, bool) {
	if m == nil {
		return Organization{}, false
	}
	m.mu.RLock()
	claim, ok := m.claims[p]
	m.mu.RUnlock()
	if !ok {
		return Organization{}, false
	}
	pub, err := proto.Ed25519FromPeerID(p)
	if err != nil {
		return Organization{}, false
	}
	o := m.r.Organization(claim, pub)
	return o, o.Verified
}

// Lookup is what the node's surfaces ask about a publisher's
// organisation; *Members implements it.
type Lookup interface {
	// Of returns the organisation shown beside publisher p for a TD that
	// claims claim (nil when it claims none), without waiting on the
	// network.
	Of(p peer.ID, claim string) *Organization
}

// Status words of a claim, as the directory API's LMOS-Organization
// header carries them.
const (
	StatusNone       = "none"
	StatusVerified   = "verified"
	StatusPending    = "pending"
	StatusUnverified = "unverified"
)

// Status is the one-word state of o: StatusNone for nil, else verified,
// pending or unverified.
func (o *Organization) Status() string {
	switch {
	case o == nil:
		return StatusNone
	case o.Verified:
		return StatusVerified
	case o.Reason == ReasonPending:
		return StatusPending
	}
	return StatusUnverified
}
