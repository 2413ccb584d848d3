package groups

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/lmosnode/lmosnode/proto"
)

// Policy is a group's policy.
type Policy struct {
	// PostRole is who may post on the group topic: "" or RoleMember (every
	// member) or RoleAdmin.
	PostRole string `json:"postRole,omitempty"`
	// MaxMembers caps the members; an add beyond it has no effect. 0 = no cap.
	MaxMembers int `json:"maxMembers,omitempty"`
}

func (p *Policy) check() error {
	switch p.PostRole {
	case "", RoleMember, RoleAdmin:
	default:
		return fmt.Errorf("policy.postRole %q: want %q or %q", p.PostRole, RoleMember, RoleAdmin)
	}
	if p.MaxMembers < 0 || p.MaxMembers > MaxLogOps {
		return fmt.Errorf("policy.maxMembers %d: want 0 (no cap) to %d", p.MaxMembers, MaxLogOps)
	}
	return nil
}

// Op is one verified, signed operation. Ops come from ParseOp, Genesis and
// Log.Sign; treat them as read-only.
type Op struct {
	// ID is the operation ID ("bafkrei…"); Group the group ID (for a
	// genesis, its own ID).
	ID, Group string
	Kind      Kind
	// Parents are the IDs of the operations the author had seen last (Sign
	// sorts them); nil for a genesis.
	Parents []string
	// Peer is the subject of add, remove, grant and revoke.
	Peer peer.ID
	// Role is the role of an add ("" means RoleMember).
	Role string
	// Things scopes an add to these Things, as digests (ScopeDigest); nil
	// means every Thing.
	Things []string
	// Name is the group name of a genesis or rename.
	Name string
	// Nonce makes a genesis unique; other kinds carry one only to tell
	// apart two otherwise identical operations.
	Nonce string
	// Policy is the policy of a genesis (may be nil) or of a policy op.
	Policy *Policy
	// Invitation is the signed invitation (without its secret) an add was
	// made for, if any, as JCS bytes.
	Invitation []byte
	// InvitationID is the invitation an uninvite revokes.
	InvitationID string
	// Author is who signed the operation (from the proof).
	Author peer.ID
	// Created is the proof's created time (second precision).
	Created time.Time
	// Raw is the signed JSON, in its JCS (RFC 8785) form, whose CID is ID.
	Raw []byte

	verified bool
	inv      *Invitation // parsed Invitation, nil if none or invErr
	invErr   error
}

// role returns the op's role with the default applied.
func (o *Op) role() string {
	if o.Role == "" {
		return RoleMember
	}
	return o.Role
}

// Draft is what a caller fills to make an operation; Log.Sign adds the
// group, the parents and the proof. Only the fields of its Kind may be set.
type Draft struct {
	Kind   Kind
	Peer   peer.ID
	Role   string
	Things []string
	Name   string
	Policy *Policy
	// Invitation is the invitation of an add (its signed part is
	// embedded; the secret never is).
	Invitation *Invitation
	// InvitationID is the invitation an uninvite revokes.
	InvitationID string
}

// opWire is the JSON form of an operation.
type opWire struct {
	Type         string          `json:"type"`
	Group        string          `json:"group,omitempty"`
	Kind         Kind            `json:"kind"`
	Parents      []string        `json:"parents,omitempty"`
	Peer         string          `json:"peer,omitempty"`
	Role         string          `json:"role,omitempty"`
	Things       []string        `json:"things,omitempty"`
	Name         string          `json:"name,omitempty"`
	Nonce        string          `json:"nonce,omitempty"`
	Policy       *Policy         `json:"policy,omitempty"`
	Invitation   json.RawMessage `json:"invitation,omitempty"`
	InvitationID string          `json:"invitationId,omitempty"`
	Proof        json.RawMessage `json:"proof,omitempty"`
}

// fields lists, per kind, the members an operation may have besides type,
// kind, nonce and proof; required ones are marked with a "!".
var fields = map[Kind][]string{
	KindGenesis:  {"name!", "nonce!", "policy"},
	KindAdd:      {"group!", "parents!", "peer!", "role", "things", "invitation"},
	KindRemove:   {"group!", "parents!", "peer!"},
	KindGrant:    {"group!", "parents!", "peer!"},
	KindRevoke:   {"group!", "parents!", "peer!"},
	KindPolicy:   {"group!", "parents!", "policy!"},
	KindRename:   {"group!", "parents!", "name!"},
	KindLeave:    {"group!", "parents!"},
	KindDissolve: {"group!", "parents!"},
	KindUninvite: {"group!", "parents!", "invitationId!"},
}

// Genesis makes the genesis operation of a new group founded by key's peer.
func Genesis(key ed25519.PrivateKey, name string, policy *Policy, now time.Time) (*Op, error) {
	nonce, err := newNonce()
	if err != nil {
		return nil, err
	}
	w := opWire{Type: typeOp, Kind: KindGenesis, Name: name, Nonce: nonce, Policy: policy}
	return signOp(key, w, now)
}

// signOp signs w and parses the result, so that what we make obeys rule 1.
func signOp(key ed25519.PrivateKey, w opWire, now time.Time) (*Op, error) {
	doc, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", w.Kind, err)
	}
	signed, err := proto.SignDocument(doc, key, now)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", w.Kind, err)
	}
	op, err := ParseOp(signed)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", w.Kind, err)
	}
	return op, nil
}

func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ParseOp checks rule 1 for a signed operation from anywhere: its size, its
// proof, its shape (the fields fit its kind). Whether it belongs to a log and
// whether its author may sign it is the Log's business.
func ParseOp(raw []byte) (*Op, error) {
	if len(raw) > MaxOpSize {
		return nil, fmt.Errorf("%w: operation of %d bytes, the limit is %d", ErrTooLarge, len(raw), MaxOpSize)
	}
	signer, err := proto.VerifyDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOp, err)
	}
	if signer.Created.IsZero() {
		return nil, fmt.Errorf("%w: proof has no created time", ErrBadOp)
	}
	canon, err := proto.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOp, err)
	}
	if len(canon) > MaxOpSize { // JCS may write numbers longer than they came
		return nil, fmt.Errorf("%w: operation of %d bytes in JCS form, the limit is %d", ErrTooLarge, len(canon), MaxOpSize)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(canon, &members); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOp, err)
	}
	var w opWire
	if err := json.Unmarshal(canon, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOp, err)
	}
	if w.Type != typeOp {
		return nil, fmt.Errorf("%w: /type %q, want %q", ErrBadOp, w.Type, typeOp)
	}
	allowed, ok := fields[w.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: /kind %q is not an operation kind", ErrBadOp, w.Kind)
	}
	if err := checkMembers(members, allowed, "type", "kind", "nonce", "proof"); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOp, w.Kind, err)
	}
	op := &Op{
		ID: opID(canon), Group: w.Group, Kind: w.Kind, Parents: w.Parents, Role: w.Role, Things: w.Things,
		Name: w.Name, Nonce: w.Nonce, Policy: w.Policy, InvitationID: w.InvitationID,
		Author: signer.PeerID, Created: signer.Created, Raw: canon, verified: true,
	}
	if err := op.checkShape(w, members); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOp, w.Kind, err)
	}
	if op.Kind == KindGenesis {
		op.Group = op.ID
	}
	return op, nil
}

// checkMembers checks that obj has only the allowed members (names exact,
// which encoding/json does not check) and every required one ("name!").
func checkMembers(obj map[string]json.RawMessage, allowed []string, always ...string) error {
	ok := make(map[string]bool, len(allowed)+len(always))
	for _, a := range always {
		ok[a] = true
	}
	for _, a := range allowed {
		name, required := strings.CutSuffix(a, "!")
		ok[name] = true
		if v, present := obj[name]; required && (!present || string(v) == "null") {
			return fmt.Errorf("/%s: required", name)
		}
	}
	for name, v := range obj {
		if !ok[name] {
			return fmt.Errorf("/%s: not allowed here", name)
		}
		if string(v) == "null" {
			return fmt.Errorf("/%s: null", name)
		}
	}
	return nil
}

func (o *Op) checkShape(w opWire, members map[string]json.RawMessage) error {
	if o.Kind != KindGenesis {
		if !isOpID(o.Group) {
			return fmt.Errorf("/group %q is not an operation ID", o.Group)
		}
		if len(o.Parents) == 0 {
			return fmt.Errorf("/parents: at least one parent")
		}
		seen := make(map[string]bool, len(o.Parents))
		for i, p := range o.Parents {
			if !isOpID(p) {
				return fmt.Errorf("/parents/%d %q is not an operation ID", i, p)
			}
			if seen[p] {
				return fmt.Errorf("/parents/%d: %s appears twice", i, p)
			}
			seen[p] = true
		}
	}
	if _, ok := members["peer"]; ok {
		id, err := peer.Decode(w.Peer)
		if err != nil || id.String() != w.Peer {
			return fmt.Errorf("/peer %q is not a peer ID", w.Peer)
		}
		o.Peer = id
	}
	if _, ok := members["role"]; ok && (o.Role == "" || utf8.RuneCountInString(o.Role) > MaxRoleLen) {
		return fmt.Errorf("/role: 1 to %d characters", MaxRoleLen)
	}
	if _, ok := members["things"]; ok {
		if len(o.Things) == 0 {
			return fmt.Errorf("/things: empty (omit it for every Thing)")
		}
		for i, t := range o.Things {
			if !IsScopeDigest(t) {
				return fmt.Errorf("/things/%d: %q is not a scope digest (sha256:…)", i, t)
			}
		}
	}
	if _, ok := members["name"]; ok && (o.Name == "" || len(o.Name) > MaxNameLen) {
		return fmt.Errorf("/name: 1 to %d bytes", MaxNameLen)
	}
	if _, ok := members["nonce"]; ok && (o.Nonce == "" || len(o.Nonce) > 64) {
		return fmt.Errorf("/nonce: 1 to 64 bytes")
	}
	if raw, ok := members["policy"]; ok {
		var pm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &pm); err != nil {
			return fmt.Errorf("/policy: %w", err)
		}
		if err := checkMembers(pm, []string{"postRole", "maxMembers"}); err != nil {
			return fmt.Errorf("/policy%w", err)
		}
		if err := o.Policy.check(); err != nil {
			return err
		}
	}
	if raw, ok := members["invitation"]; ok {
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("/invitation: want the signed invitation (an object)")
		}
		o.inv, o.invErr = parseInvitationJSON(raw)
		if o.invErr == nil {
			o.Invitation = o.inv.Raw
		} else {
			o.Invitation = slices.Clone(raw)
		}
	}
	if _, ok := members["invitationId"]; ok && !isOpID(o.InvitationID) {
		return fmt.Errorf("/invitationId %q is not an invitation ID", o.InvitationID)
	}
	return nil
}

// opID is the operation ID of canonical (JCS) bytes: the CIDv1 (raw,
// sha2-256) in base32, "bafkrei…".
func opID(canon []byte) string {
	mh, err := multihash.Sum(canon, multihash.SHA2_256, -1)
	if err != nil {
		panic("groups: sha2-256 multihash: " + err.Error()) // impossible: a built-in hash
	}
	return cid.NewCidV1(cid.Raw, mh).String()
}

// opIDLen is the length of an operation ID.
var opIDLen = len(opID(nil))

// isOpID reports whether s is an operation ID in canonical form.
func isOpID(s string) bool {
	if len(s) != opIDLen || !strings.HasPrefix(s, "bafkrei") {
		return false
	}
	c, err := cid.Decode(s)
	if err != nil {
		return false
	}
	p := c.Prefix()
	return p.Version == 1 && p.Codec == cid.Raw && p.MhType == multihash.SHA2_256 && c.String() == s
}

// verify makes sure op came from ParseOp (an Op built by hand is parsed
// again from its Raw).
func verify(op *Op) (*Op, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: nil operation", ErrBadOp)
	}
	if op.verified {
		return op, nil
	}
	return ParseOp(op.Raw)
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// IsID reports whether s is a group, operation or invitation ID in
// canonical form ("bafkrei…").
func IsID(s string) bool { return isOpID(s) }
