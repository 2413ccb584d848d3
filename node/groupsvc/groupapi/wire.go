package groupapi

import (
	"encoding/json"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// The JSON shapes of the API (docs/groups.md, "HTTP API"), declared once
// for the Handler and its client (node/apiclient), and their conversion
// from the group service's types.

// GroupInfo is a group as the node sees it: the answer of most routes.
type GroupInfo struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	Founder   peer.ID       `json:"founder"`
	Created   time.Time     `json:"created"`
	Dissolved bool          `json:"dissolved"`
	Policy    groups.Policy `json:"policy"`
	Members   []Member      `json:"members"`
	Self      Self          `json:"self"`
	Heads     []string      `json:"heads"`
	Ops       int           `json:"ops"`
	// Log is every operation in fold order; only GET /api/v1/groups/{id}
	// fills it.
	Log []LogEntry `json:"log,omitempty"`
}

// Member is one member of GroupInfo.
type Member struct {
	Peer  peer.ID `json:"peer"`
	Role  string  `json:"role"`
	Admin bool    `json:"admin"`
	// Things scopes the member to these Things: their IDs where the node
	// knows them (it issued the invitation), else the digests the log
	// holds ("sha256:…", groups.ScopeDigest); empty (never null): every
	// Thing of the group.
	Things []string  `json:"things"`
	Since  time.Time `json:"since"`
}

// Self is the node's own place in the group.
type Self struct {
	Member bool `json:"member"`
	Admin  bool `json:"admin"`
}

// LogEntry is one operation of GroupInfo.Log.
type LogEntry struct {
	ID      string      `json:"id"`
	Kind    groups.Kind `json:"kind"`
	Author  peer.ID     `json:"author"`
	Created time.Time   `json:"created"`
	// Peer is the subject of an add, remove, grant or revoke.
	Peer peer.ID `json:"peer,omitempty"`
	// Effective is whether the operation had effect in the fold.
	Effective bool `json:"effective"`
	// Op is the signed operation.
	Op json.RawMessage `json:"op"`
}

// Target is what the operation acts on, for display: the peer of an add,
// remove, grant or revoke, else the name of a genesis or rename, else the
// policy (compact JSON) of a policy operation, else the invitation ID of an
// uninvite; "" for the others. The name
// and policy are read from the signed operation, which must verify
// (groups.ParseOp).
func (e LogEntry) Target() string {
	if e.Peer != "" {
		return e.Peer.String()
	}
	op, err := groups.ParseOp(e.Op)
	switch {
	case err != nil:
		return ""
	case op.Name != "":
		return op.Name
	case op.InvitationID != "":
		return "invitation " + op.InvitationID
	case op.Policy != nil:
		// As signed: op.Raw is compact (JCS).
		var w struct {
			Policy json.RawMessage `json:"policy"`
		}
		if json.Unmarshal(op.Raw, &w) == nil {
			return string(w.Policy)
		}
	}
	return ""
}

// CreateRequest is the body of POST /api/v1/groups.
type CreateRequest struct {
	Name   string         `json:"name"`
	Policy *groups.Policy `json:"policy,omitempty"`
}

// PatchRequest is the body of PATCH /api/v1/groups/{id}: a rename, a new
// policy, or both.
type PatchRequest struct {
	Name   *string        `json:"name,omitempty"`
	Policy *groups.Policy `json:"policy,omitempty"`
}

// InviteRequest is the body of POST /api/v1/groups/{id}/invitations; every
// member is optional. (Its members are in name order, as the CLI always
// sent them.)
type InviteRequest struct {
	// For binds the invitation to this peer ID.
	For string `json:"for,omitempty"`
	// Role is the joiner's role (default member).
	Role string `json:"role,omitempty"`
	// Things scopes the joiner to these Thing IDs.
	Things []string `json:"things,omitempty"`
	// TTL is how long the invitation is valid, a Go duration ("1h",
	// the default).
	TTL string `json:"ttl,omitempty"`
	// Uses is how many peers may join with it: absent 1 (single use), 0
	// any number until it expires.
	Uses *int `json:"uses,omitempty"`
}

// Invitation is the answer of POST /api/v1/groups/{id}/invitations.
type Invitation struct {
	Token string `json:"token"`
	// ID is the invitation's ID, what GET …/invitations lists and DELETE
	// …/invitations/{inv} revokes.
	ID      string    `json:"id"`
	Expires time.Time `json:"expires"`
}

// InvitationInfo is one invitation of GET /api/v1/groups/{id}/invitations.
type InvitationInfo struct {
	ID     string  `json:"id"`
	Issuer peer.ID `json:"issuer"`
	// For is the only peer that may join with it, if any.
	For  peer.ID `json:"for,omitempty"`
	Role string  `json:"role"`
	// Things scopes the joiner; empty (never null): every Thing.
	Things []string `json:"things"`
	// Uses is how many peers may join with it (0: no limit); Used how
	// many did.
	Uses    int       `json:"uses"`
	Used    int       `json:"used"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`
	// Status is "outstanding", "spent", "revoked" or "expired".
	Status string `json:"status"`
	// Mine is whether this node issued it.
	Mine bool `json:"mine"`
}

// JoinRequest is the body of POST /api/v1/groups/join.
type JoinRequest struct {
	Token string `json:"token"`
}

// JoinResult is what a join did. The API answers 200 with the GroupInfo
// when the node joined, and 202 with {"group", "pending": true} when no
// admin's node answered yet (the node keeps trying); apiclient's Join
// fills Info in the first case.
type JoinResult struct {
	Group   string     `json:"group"`
	Pending bool       `json:"pending,omitempty"`
	Info    *GroupInfo `json:"-"`
}

// Post is one message of the group's stream (GET
// /api/v1/groups/{id}/messages, event "post").
type Post struct {
	// From is the post's author.
	From peer.ID `json:"from"`
	// Body is the post's body, any JSON (a string for text).
	Body json.RawMessage `json:"body"`
	// Sent is when the author says it sent the post.
	Sent time.Time `json:"sent"`
}

// toWire is in's GroupInfo.
func toWire(in groupsvc.Info) GroupInfo {
	g := GroupInfo{
		ID: in.ID, Name: in.Name, Founder: in.Founder, Created: in.Created,
		Dissolved: in.Dissolved, Policy: in.Policy,
		Members: make([]Member, 0, len(in.Members)),
		Self:    Self{Member: in.Self.Member, Admin: in.Self.Admin},
		Heads:   in.Heads, Ops: in.Ops,
	}
	if g.Heads == nil {
		g.Heads = []string{}
	}
	for _, m := range in.Members {
		things := m.Things
		if things == nil {
			things = []string{}
		}
		g.Members = append(g.Members, Member{Peer: m.Peer, Role: m.Role, Admin: m.Admin, Things: things, Since: m.Since})
	}
	for _, op := range in.Log {
		g.Log = append(g.Log, LogEntry{ID: op.ID, Kind: op.Kind, Author: op.Author, Created: op.Created,
			Peer: op.Peer, Effective: op.Effective, Op: op.Op})
	}
	return g
}

// invitationsToWire is ins as the API answers them, never nil.
func invitationsToWire(ins []groupsvc.InvitationInfo) []InvitationInfo {
	out := make([]InvitationInfo, 0, len(ins))
	for _, in := range ins {
		things := in.Things
		if things == nil {
			things = []string{}
		}
		out = append(out, InvitationInfo{ID: in.ID, Issuer: in.Issuer, For: in.For, Role: in.Role, Things: things,
			Uses: in.Uses, Used: in.Used, Issued: in.Issued, Expires: in.Expires, Status: in.Status, Mine: in.Mine})
	}
	return out
}

// toWireList is toWire of each of ins, never nil.
func toWireList(ins []groupsvc.Info) []GroupInfo {
	out := make([]GroupInfo, 0, len(ins))
	for _, in := range ins {
		out = append(out, toWire(in))
	}
	return out
}

// postToWire is r's Post.
func postToWire(r groupsvc.Received) Post {
	return Post{From: r.From, Body: r.Body, Sent: r.Sent}
}
