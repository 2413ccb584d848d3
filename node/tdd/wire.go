package tdd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Media types of the API.
const (
	// ContentTypeTD is a single Thing Description.
	ContentTypeTD = "application/td+json"
	// ContentTypeLDJSON is the listing of /things (a JSON array of TDs).
	ContentTypeLDJSON = "application/ld+json"
	// ContentTypeJSON is every other body.
	ContentTypeJSON = "application/json"
	// ContentTypeMergePatch is the body of PATCH /things/{id}.
	ContentTypeMergePatch = "application/merge-patch+json"
	// ContentTypeEventStream is the body of /events.
	ContentTypeEventStream = httpapi.ContentTypeEventStream
	// ContentTypeProblem is the body of every error response, an RFC 9457
	// problem (a *proto.Problem).
	ContentTypeProblem = lmosproto.ContentTypeProblemJSON
)

// Response headers carrying registration information (see the package
// documentation).
const (
	HeaderRegistration = "LMOS-Registration"
	HeaderPublisher    = "LMOS-Publisher"
	// HeaderTrust is the publisher's mark in the node's trust list: own,
	// trusted, denied or unknown (by its own entry or its verified
	// organisation's); the listing gives one per TD, comma-separated.
	HeaderTrust = "LMOS-Trust"
	// HeaderOrganization is the state of the organisation the TD claims
	// (lmos:organization): none, verified, pending or unverified; the
	// listing gives one per TD, comma-separated, like HeaderOnline.
	// HeaderOrganizationReason says why a retrieved TD's claim is not
	// verified.
	HeaderOrganization       = "LMOS-Organization"
	HeaderOrganizationReason = "LMOS-Organization-Reason"
	// HeaderOnline on a listing (GET /things) says, for each Thing of the
	// page in order, whether it is online: "true, false, true".
	HeaderOnline = "LMOS-Online"
)

// Registration is the registration information of a Thing in this
// directory (WoT Discovery §7.3.2.1.3).
type Registration struct {
	// Created is when the directory first registered the Thing.
	Created time.Time `json:"created"`
	// Modified is when its record last changed here.
	Modified time.Time `json:"modified"`
	// Expires is when a learned Thing is dropped unless seen again; nil
	// for own Things.
	Expires *time.Time `json:"expires,omitempty"`
	// TTL is the lifetime Expires was computed with, in seconds; 0 for own
	// Things.
	TTL int64 `json:"ttl,omitempty"`
	// Retrieved is when the TD was served; set only in an Enriched TD.
	Retrieved *time.Time `json:"retrieved,omitempty"`
	// Online is whether the Thing's publisher was seen recently (always
	// for the node's own Things); LastSeen when it was last seen (nil for
	// own Things, or never). Not part of WoT Discovery: lmosnode's
	// liveness (docs/api.md#liveness).
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
}

// enrich returns the Enriched TD of the signed TD raw (WoT Discovery
// §7.3.1.1): raw with a top-level "registration" member (reg, retrieved
// at now) and DiscoveryContext in its @context. It is a view: the proof is
// kept but no longer verifies, as it covers the document as signed, which
// the directory serves without enriched=true.
func enrich(raw []byte, reg Registration, now time.Time) ([]byte, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("signed TD is not a JSON object")
	}
	switch c := doc["@context"].(type) {
	case string:
		if c != DiscoveryContext {
			doc["@context"] = []any{c, DiscoveryContext}
		}
	case []any:
		if !slices.Contains(c, any(DiscoveryContext)) {
			// Before the first object: by convention prefix maps come last.
			i := slices.IndexFunc(c, func(x any) bool { _, isStr := x.(string); return !isStr })
			if i < 0 {
				i = len(c)
			}
			doc["@context"] = slices.Insert(c, i, any(DiscoveryContext))
		}
	default:
		doc["@context"] = DiscoveryContext
	}
	retrieved := now.UTC().Truncate(time.Second)
	reg.Retrieved = &retrieved
	doc["registration"] = reg
	return encodeJSON(doc)
}

func registrationOf(e directory.Entry) Registration {
	reg := Registration{Created: e.Created.UTC(), Modified: e.Modified.UTC(), Online: e.Online}
	if !e.LastSeen.IsZero() {
		seen := e.LastSeen.UTC()
		reg.LastSeen = &seen
	}
	if !e.Expires.IsZero() {
		exp := e.Expires.UTC()
		reg.Expires = &exp
		reg.TTL = int64(e.TTL / time.Second)
	}
	return reg
}

// header is the RFC 8941 dictionary form of reg.
func (reg Registration) header() string {
	const layout = time.RFC3339
	parts := []string{
		`created="` + reg.Created.Format(layout) + `"`,
		`modified="` + reg.Modified.Format(layout) + `"`,
	}
	if reg.Expires != nil {
		parts = append(parts, `expires="`+reg.Expires.Format(layout)+`"`, "ttl="+strconv.FormatInt(reg.TTL, 10))
	}
	if reg.Online {
		parts = append(parts, "online")
	} else {
		parts = append(parts, "online=?0")
	}
	if reg.LastSeen != nil {
		parts = append(parts, `lastSeen="`+reg.LastSeen.Format(layout)+`"`)
	}
	return strings.Join(parts, ", ")
}

// setRegistrationHeaders describes e's registration in h.
func setRegistrationHeaders(h http.Header, e directory.Entry) {
	reg := registrationOf(e)
	h.Set(HeaderRegistration, reg.header())
	h.Set(HeaderPublisher, e.Publisher.String())
	if !reg.Modified.IsZero() {
		h.Set("Last-Modified", reg.Modified.Format(http.TimeFormat))
	}
	if reg.Expires != nil {
		h.Set("Expires", reg.Expires.Format(http.TimeFormat))
	}
}

// ThingInfo is one Thing in the admin API: the signed TD with what the
// directory knows about it.
type ThingInfo struct {
	// ID is the Thing's id.
	ID string `json:"id"`
	// Publisher is the publisher's peer ID.
	Publisher string `json:"publisher"`
	// Own is set for the node's own Things.
	Own bool `json:"own"`
	// Seq is the record's lmos:seq.
	Seq uint64 `json:"seq"`
	// Backend is the node-local backend URL of an own Thing.
	Backend string `json:"backend,omitempty"`
	// Organization is the organisation the TD claims, verified or not
	// (absent without a claim).
	Organization *did.Organization `json:"organization,omitempty"`
	// Registration is the registration information.
	Registration Registration `json:"registration"`
	// TD is the signed TD exactly as published.
	TD json.RawMessage `json:"td"`
}

// thingInfo is thingInfo with the organisation the TD claims, checked.
func (h *Handler) thingInfo(e directory.Entry) (ThingInfo, error) {
	info, err := thingInfo(e)
	if err == nil {
		if rec, rerr := e.Record(); rerr == nil {
			info.Organization = h.organization(e.Publisher, rec.TD.Organization())
		}
	}
	return info, err
}

func thingInfo(e directory.Entry) (ThingInfo, error) {
	rec, err := e.Record()
	if err != nil {
		return ThingInfo{}, err
	}
	if rec.Tombstone() {
		return ThingInfo{}, fmt.Errorf("thing %q of %s: removed", e.ThingID, e.Publisher)
	}
	return ThingInfo{
		ID:           e.ThingID,
		Publisher:    e.Publisher.String(),
		Own:          e.Own,
		Seq:          rec.Seq,
		Backend:      e.Local.Backend,
		Registration: registrationOf(e),
		TD:           rec.Raw,
	}, nil
}

// PublishRequest is the body of POST /api/v1/things.
type PublishRequest struct {
	// TD is the Thing Description to publish (unsigned, or signed: its
	// proof and lmos:seq are replaced). Without an id it gets a urn:uuid.
	TD json.RawMessage `json:"td"`
	// Backend is the URL of the HTTP service implementing the Thing; the
	// node forwards calls to it. It is node-local, never published. Nil
	// keeps the backend stored for the Thing; "" clears it.
	Backend *string `json:"backend,omitempty"`
}

// PublishResult is the body of a successful POST /api/v1/things.
type PublishResult struct {
	ThingInfo
	// Change is "created", "updated" or "unchanged".
	Change string `json:"change"`
}

// ConnectRequest is the body of POST /api/v1/connect.
type ConnectRequest struct {
	// Addr is the peer's multiaddr, ending in /p2p/<peer ID>.
	Addr string `json:"addr"`
}

// Peer is a peer in the admin API.
type Peer struct {
	PeerID string   `json:"peerID"`
	Addrs  []string `json:"addrs"`
	Source string   `json:"source,omitempty"`
	// State is "connected", or "limited" when the only connections are
	// relayed ones with limits.
	State string `json:"state,omitempty"`
	// Direction is "inbound", "outbound" or "both": who opened the open
	// connections.
	Direction string `json:"direction,omitempty"`
	// Relayed is true when every open connection goes through a
	// circuit relay; false when one at least is direct.
	Relayed bool `json:"relayed"`
	// LatencyMS is the measured round-trip time in milliseconds (moving
	// average); absent when not measured yet.
	LatencyMS float64 `json:"latencyMS,omitempty"`
	// AgentVersion is what the peer says it runs, e.g. "lmosnode/v1.2.0".
	AgentVersion string `json:"agentVersion,omitempty"`
	// ConnectedAt is when the oldest open connection was opened.
	ConnectedAt *time.Time `json:"connectedAt,omitempty"`
}

func toWirePeer(p PeerInfo) Peer {
	w := Peer{PeerID: p.ID.String(), Addrs: make([]string, 0, len(p.Addrs)), Source: p.Source,
		State: p.Conn.State, Direction: p.Conn.Direction, Relayed: p.Conn.Relayed,
		LatencyMS: float64(p.Conn.Latency.Microseconds()) / 1000, AgentVersion: p.Conn.AgentVersion}
	if !p.Conn.ConnectedAt.IsZero() {
		t := p.Conn.ConnectedAt.UTC()
		w.ConnectedAt = &t
	}
	for _, a := range p.Addrs {
		if a != nil && !slices.Contains(w.Addrs, a.String()) {
			w.Addrs = append(w.Addrs, a.String())
		}
	}
	return w
}
