package groups

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/proto"
)

// Invitation is a signed, expiring token an admin hands out of band; whoever
// holds it may ask an admin's node to be added to the group.
type Invitation struct {
	// ID is the invitation's ID (CID of its JCS bytes, like an operation's).
	ID, Group, Name string
	// Issuer is the admin who signed it.
	Issuer peer.ID
	// Addrs are multiaddrs where the issuer can be reached.
	Addrs []string
	// For is the only peer that may use it; "" = anyone.
	For peer.ID
	// Role is the role the joiner gets ("" = RoleMember).
	Role string
	// Things scopes the joiner; nil = every Thing of the group.
	Things []string
	// Once makes it single-use.
	Once bool
	// Expires is when it stops being valid (second precision).
	Expires time.Time
	// Raw is the signed JSON (JCS form).
	Raw []byte
}

func (inv *Invitation) role() string {
	if inv.Role == "" {
		return RoleMember
	}
	return inv.Role
}

type inviteWire struct {
	Type    string          `json:"type"`
	Group   string          `json:"group"`
	Name    string          `json:"name,omitempty"`
	Issuer  string          `json:"issuer"`
	Addrs   []string        `json:"addrs,omitempty"`
	For     string          `json:"for,omitempty"`
	Role    string          `json:"role,omitempty"`
	Things  []string        `json:"things,omitempty"`
	Once    bool            `json:"once,omitempty"`
	Expires string          `json:"expires"`
	Nonce   string          `json:"nonce"`
	Proof   json.RawMessage `json:"proof,omitempty"`
}

const expiresLayout = "2006-01-02T15:04:05Z"

// NewInvitation signs inv with key and returns its token. It fills Issuer
// (key's peer) and a random nonce; ID, Raw and Issuer of inv are ignored.
// Expires is required and must be after now.
func NewInvitation(key ed25519.PrivateKey, inv Invitation, now time.Time) (token string, err error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("invitation: private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	issuer, err := proto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
	if err != nil {
		return "", fmt.Errorf("invitation: %w", err)
	}
	if !inv.Expires.After(now) {
		return "", fmt.Errorf("%w: invitation: expires %v is not after now", ErrBadInvitation, inv.Expires)
	}
	nonce, err := newNonce()
	if err != nil {
		return "", err
	}
	w := inviteWire{
		Type: typeInvitation, Group: inv.Group, Name: inv.Name, Issuer: issuer.String(), Addrs: inv.Addrs,
		Role: inv.Role, Things: inv.Things, Once: inv.Once,
		Expires: inv.Expires.UTC().Truncate(time.Second).Format(expiresLayout), Nonce: nonce,
	}
	if inv.For != "" {
		w.For = inv.For.String()
	}
	doc, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("invitation: %w", err)
	}
	signed, err := proto.SignDocument(doc, key, now)
	if err != nil {
		return "", fmt.Errorf("invitation: %w", err)
	}
	canon, err := jcs.Transform(signed)
	if err != nil {
		return "", fmt.Errorf("invitation: %w", err)
	}
	token = InvitePrefix + base64.RawURLEncoding.EncodeToString(canon)
	if _, err := parseToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// ParseInvitation checks a token: its form, signature and shape, and that it
// has not expired at now (ErrExpired otherwise); a zero now skips the
// expiry check (to read a token whose expiry another node checks).
func ParseInvitation(token string, now time.Time) (*Invitation, error) {
	inv, err := parseToken(token)
	if err != nil {
		return nil, err
	}
	if now.After(inv.Expires) {
		return nil, fmt.Errorf("%w: invitation to %s expired at %s", ErrExpired, inv.Group, inv.Expires.Format(time.RFC3339))
	}
	return inv, nil
}

// parseToken is ParseInvitation without the expiry check.
func parseToken(token string) (*Invitation, error) {
	b64, ok := strings.CutPrefix(token, InvitePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: token does not start with %q", ErrBadInvitation, InvitePrefix)
	}
	if len(b64) > base64.RawURLEncoding.EncodedLen(MaxInvitationSize) {
		return nil, fmt.Errorf("%w: invitation token of %d bytes", ErrTooLarge, len(token))
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: token: %w", ErrBadInvitation, err)
	}
	return parseInvitationJSON(raw)
}

func parseInvitationJSON(raw []byte) (*Invitation, error) {
	if len(raw) > MaxInvitationSize {
		return nil, fmt.Errorf("%w: invitation of %d bytes, the limit is %d", ErrTooLarge, len(raw), MaxInvitationSize)
	}
	signer, err := proto.VerifyDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	if len(canon) > MaxInvitationSize {
		return nil, fmt.Errorf("%w: invitation of %d bytes in JCS form, the limit is %d", ErrTooLarge, len(canon), MaxInvitationSize)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(canon, &members); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	if err := checkMembers(members, []string{"type!", "group!", "name", "issuer!", "addrs", "for", "role", "things", "once", "expires!", "nonce!", "proof!"}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	var w inviteWire
	if err := json.Unmarshal(canon, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	bad := func(format string, args ...any) (*Invitation, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadInvitation}, args...)...)
	}
	if w.Type != typeInvitation {
		return bad("/type %q, want %q", w.Type, typeInvitation)
	}
	if !isOpID(w.Group) {
		return bad("/group %q is not a group ID", w.Group)
	}
	if len(w.Name) > MaxNameLen {
		return bad("/name: longer than %d bytes", MaxNameLen)
	}
	if w.Issuer != signer.PeerID.String() {
		return bad("/issuer %q is not the signer %s", w.Issuer, signer.PeerID)
	}
	inv := &Invitation{
		ID: opID(canon), Group: w.Group, Name: w.Name, Issuer: signer.PeerID, Addrs: w.Addrs,
		Role: w.Role, Things: w.Things, Once: w.Once, Raw: canon,
	}
	for i, a := range w.Addrs {
		if _, err := multiaddr.NewMultiaddr(a); err != nil {
			return bad("/addrs/%d: %v", i, err)
		}
	}
	if _, ok := members["for"]; ok {
		id, err := peer.Decode(w.For)
		if err != nil || id.String() != w.For {
			return bad("/for %q is not a peer ID", w.For)
		}
		inv.For = id
	}
	if _, ok := members["role"]; ok && (w.Role == "" || utf8.RuneCountInString(w.Role) > MaxRoleLen) {
		return bad("/role: 1 to %d characters", MaxRoleLen)
	}
	if _, ok := members["things"]; ok {
		if len(w.Things) == 0 {
			return bad("/things: empty (omit it for every Thing)")
		}
		for i, t := range w.Things {
			if t == "" {
				return bad("/things/%d: empty Thing ID", i)
			}
		}
	}
	if w.Nonce == "" || len(w.Nonce) > 64 {
		return bad("/nonce: 1 to 64 bytes")
	}
	inv.Expires, err = time.Parse(time.RFC3339, w.Expires)
	if err != nil {
		return bad("/expires: %v", err)
	}
	inv.Expires = inv.Expires.UTC()
	return inv, nil
}

// Token returns the invitation's token form.
func (inv *Invitation) Token() string {
	return InvitePrefix + base64.RawURLEncoding.EncodeToString(inv.Raw)
}

// CheckJoin is what the admin's node runs before signing the add for a
// joiner: the invitation verifies and names this group, the group is not
// dissolved, the issuer is still an admin, it names the joiner (if it names
// anyone), a single-use invitation is not spent, it has not expired at now,
// and the group has room for the joiner.
func (l *Log) CheckJoin(inv *Invitation, joiner peer.ID, now time.Time) error {
	if inv == nil {
		return fmt.Errorf("%w: no invitation", ErrBadInvitation)
	}
	checked, err := parseInvitationJSON(inv.Raw) // never trust the fields alone
	if err != nil {
		return err
	}
	if checked.Group != l.ID() {
		return fmt.Errorf("%w: invitation to %s, not %s", ErrWrongGroup, checked.Group, l.ID())
	}
	st := l.State()
	switch {
	case st.Dissolved:
		return fmt.Errorf("%w: %s", ErrDissolved, l.ID())
	case now.After(checked.Expires):
		return fmt.Errorf("%w: at %s", ErrExpired, checked.Expires.Format(time.RFC3339))
	case !st.IsAdmin(checked.Issuer):
		return fmt.Errorf("%w: the invitation's issuer %s is no longer an admin", ErrNotAuthorized, checked.Issuer)
	case checked.For != "" && checked.For != joiner:
		return fmt.Errorf("%w: the invitation is for %s, not %s", ErrNotAuthorized, checked.For, joiner)
	case checked.Once && st.used[checked.ID]:
		return fmt.Errorf("%w: %s", ErrSpent, checked.ID)
	case st.Policy.MaxMembers > 0 && !st.IsMember(joiner) && len(st.Members) >= st.Policy.MaxMembers:
		return fmt.Errorf("%w: %d members, the policy's maximum", ErrGroupFull, len(st.Members))
	}
	return nil
}
