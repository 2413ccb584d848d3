package groups

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/proto"
)

// Invitation is a signed, expiring invitation an admin hands out of band,
// as a token that also holds a secret; whoever holds the token may ask an
// admin's node to be added to the group. The signed part (Raw) holds only a
// hash of the secret, so the add operation that embeds it, and the public
// log that holds that, give nobody the means to join.
type Invitation struct {
	// ID is the invitation's ID (CID of the JCS bytes of its signed part,
	// like an operation's).
	ID, Group string
	// Issuer is the admin who signed it.
	Issuer peer.ID
	// For is the only peer that may use it; "" = anyone.
	For peer.ID
	// Role is the role the joiner gets ("" = RoleMember).
	Role string
	// Things scopes the joiner, as digests of Thing IDs (ScopeDigest;
	// NewInvitation turns IDs into digests); nil = every Thing of the
	// group.
	Things []string
	// Uses is how many adds may use it; 0 = any number until it expires.
	Uses int
	// Issued is when it was signed (its proof's created time); Expires is
	// when it stops being valid (both second precision).
	Issued, Expires time.Time
	// Raw is the signed JSON (JCS form), without the secret: what an add
	// operation embeds.
	Raw []byte

	// Name and Addrs are hints of the token (not signed, never in a log):
	// the group's name and multiaddrs where the issuer can be reached.
	Name  string
	Addrs []string

	secretHash string // base64url SHA-256 of the secret, from Raw
	secret     []byte // the token's secret; nil for an invitation read from a log
}

func (inv *Invitation) role() string {
	if inv.Role == "" {
		return RoleMember
	}
	return inv.Role
}

// inviteWire is the JSON form of the signed part of an invitation.
type inviteWire struct {
	Type       string          `json:"type"`
	Group      string          `json:"group"`
	Issuer     string          `json:"issuer"`
	For        string          `json:"for,omitempty"`
	Role       string          `json:"role,omitempty"`
	Things     []string        `json:"things,omitempty"`
	Uses       int             `json:"uses,omitempty"`
	Expires    string          `json:"expires"`
	Nonce      string          `json:"nonce"`
	SecretHash string          `json:"secretHash"`
	Proof      json.RawMessage `json:"proof,omitempty"`
}

// tokenWire is the JSON form of a token: the signed invitation, its secret
// and the unsigned hints.
type tokenWire struct {
	Invitation json.RawMessage `json:"invitation"`
	Secret     string          `json:"secret"`
	Name       string          `json:"name,omitempty"`
	Addrs      []string        `json:"addrs,omitempty"`
}

const (
	expiresLayout = "2006-01-02T15:04:05Z"
	// secretSize is the size of an invitation's secret.
	secretSize = 32
)

func hashSecret(secret []byte) string {
	h := sha256.Sum256(secret)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// NewInvitation signs inv with key and returns its token. It fills Issuer
// (key's peer), a random nonce and a random secret (the token holds it, the
// signed part its hash); ID, Raw, Issued and Issuer of inv are ignored.
// Expires is required and must be after now; Uses must not be negative.
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
	secret := make([]byte, secretSize)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("invitation: secret: %w", err)
	}
	w := inviteWire{
		Type: typeInvitation, Group: inv.Group, Issuer: issuer.String(),
		Role: inv.Role, Things: scopeDigests(inv.Group, inv.Things), Uses: inv.Uses,
		Expires: inv.Expires.UTC().Truncate(time.Second).Format(expiresLayout), Nonce: nonce,
		SecretHash: hashSecret(secret),
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
	canon, err := proto.Canonicalize(signed)
	if err != nil {
		return "", fmt.Errorf("invitation: %w", err)
	}
	parsed, err := parseInvitationJSON(canon)
	if err != nil {
		return "", err
	}
	parsed.Name, parsed.Addrs, parsed.secret = inv.Name, inv.Addrs, secret
	token = parsed.Token()
	if _, err := parseToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// ParseInvitation checks a token: its form, the signature and shape of the
// invitation, that the secret matches the invitation's hash of it, and that
// it has not expired at now (ErrExpired otherwise); a zero now skips the
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

// ParseSignedInvitation checks the signed part of an invitation (as an add
// operation embeds it, without a secret): its size, signature and shape.
func ParseSignedInvitation(raw []byte) (*Invitation, error) {
	return parseInvitationJSON(raw)
}

// parseToken is ParseInvitation without the expiry check.
func parseToken(token string) (*Invitation, error) {
	b64, ok := strings.CutPrefix(token, InvitePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: token does not start with %q", ErrBadInvitation, InvitePrefix)
	}
	if len(b64) > base64.RawURLEncoding.EncodedLen(MaxTokenSize) {
		return nil, fmt.Errorf("%w: invitation token of %d bytes", ErrTooLarge, len(token))
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: token: %w", ErrBadInvitation, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("%w: token: %w", ErrBadInvitation, err)
	}
	if err := checkMembers(members, []string{"invitation!", "secret!", "name", "addrs"}); err != nil {
		return nil, fmt.Errorf("%w: token: %w", ErrBadInvitation, err)
	}
	var w tokenWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: token: %w", ErrBadInvitation, err)
	}
	inv, err := parseInvitationJSON(w.Invitation)
	if err != nil {
		return nil, err
	}
	secret, err := base64.RawURLEncoding.DecodeString(w.Secret)
	if err != nil || len(secret) != secretSize {
		return nil, fmt.Errorf("%w: token: /secret: want %d bytes in base64url", ErrBadInvitation, secretSize)
	}
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(inv.secretHash)) != 1 {
		return nil, fmt.Errorf("%w: token: the secret does not match the invitation", ErrBadInvitation)
	}
	if len(w.Name) > MaxNameLen {
		return nil, fmt.Errorf("%w: token: /name: longer than %d bytes", ErrBadInvitation, MaxNameLen)
	}
	for i, a := range w.Addrs {
		if _, err := multiaddr.NewMultiaddr(a); err != nil {
			return nil, fmt.Errorf("%w: token: /addrs/%d: %v", ErrBadInvitation, i, err)
		}
	}
	inv.Name, inv.Addrs, inv.secret = w.Name, w.Addrs, secret
	return inv, nil
}

// parseInvitationJSON is ParseSignedInvitation: the signature and size
// (verifyInvitation), the members (checkInviteWire), then the expiry, which
// must not come before the proof's created time.
func parseInvitationJSON(raw []byte) (*Invitation, error) {
	signer, canon, err := verifyInvitation(raw)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(canon, &members); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	if err := checkMembers(members, []string{"type!", "group!", "issuer!", "for", "role", "things", "uses", "expires!", "nonce!", "secretHash!", "proof!"}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	var w inviteWire
	if err := json.Unmarshal(canon, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	forID, err := checkInviteWire(&w, members, signer.PeerID)
	if err != nil {
		return nil, err
	}
	inv := &Invitation{
		ID: opID(canon), Group: w.Group, Issuer: signer.PeerID, For: forID,
		Role: w.Role, Things: w.Things, Uses: w.Uses, Issued: signer.Created.UTC(), Raw: canon,
		secretHash: w.SecretHash,
	}
	inv.Expires, err = time.Parse(time.RFC3339, w.Expires)
	if err != nil {
		return nil, badInvitation("/expires: %v", err)
	}
	inv.Expires = inv.Expires.UTC()
	if inv.Expires.Before(inv.Issued) {
		return nil, badInvitation("/expires %s is before it was issued (%s)", w.Expires, inv.Issued.Format(time.RFC3339))
	}
	return inv, nil
}

// verifyInvitation checks the size and the proof of a signed invitation
// and returns its signer and its JCS form.
func verifyInvitation(raw []byte) (proto.Signer, []byte, error) {
	if len(raw) > MaxInvitationSize {
		return proto.Signer{}, nil, fmt.Errorf("%w: invitation of %d bytes, the limit is %d", ErrTooLarge, len(raw), MaxInvitationSize)
	}
	signer, err := proto.VerifyDocument(raw)
	if err != nil {
		return proto.Signer{}, nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	if signer.Created.IsZero() {
		return proto.Signer{}, nil, fmt.Errorf("%w: proof has no created time", ErrBadInvitation)
	}
	canon, err := proto.Canonicalize(raw)
	if err != nil {
		return proto.Signer{}, nil, fmt.Errorf("%w: %w", ErrBadInvitation, err)
	}
	if len(canon) > MaxInvitationSize {
		return proto.Signer{}, nil, fmt.Errorf("%w: invitation of %d bytes in JCS form, the limit is %d", ErrTooLarge, len(canon), MaxInvitationSize)
	}
	return signer, canon, nil
}

// checkInviteWire checks the members of an invitation signed by issuer,
// but its expiry (members: which of them are present), and returns the
// peer it is for, if any.
func checkInviteWire(w *inviteWire, members map[string]json.RawMessage, issuer peer.ID) (forID peer.ID, err error) {
	if w.Type != typeInvitation {
		return "", badInvitation("/type %q, want %q", w.Type, typeInvitation)
	}
	if !isOpID(w.Group) {
		return "", badInvitation("/group %q is not a group ID", w.Group)
	}
	if w.Issuer != issuer.String() {
		return "", badInvitation("/issuer %q is not the signer %s", w.Issuer, issuer)
	}
	if _, ok := members["for"]; ok {
		forID, err = peer.Decode(w.For)
		if err != nil || forID.String() != w.For {
			return "", badInvitation("/for %q is not a peer ID", w.For)
		}
	}
	if _, ok := members["role"]; ok && (w.Role == "" || utf8.RuneCountInString(w.Role) > MaxRoleLen) {
		return "", badInvitation("/role: 1 to %d characters", MaxRoleLen)
	}
	if _, ok := members["things"]; ok {
		if len(w.Things) == 0 {
			return "", badInvitation("/things: empty (omit it for every Thing)")
		}
		for i, t := range w.Things {
			if !IsScopeDigest(t) {
				return "", badInvitation("/things/%d: %q is not a scope digest (sha256:…)", i, t)
			}
		}
	}
	if _, ok := members["uses"]; ok && (w.Uses < 1 || w.Uses > MaxLogOps) {
		return "", badInvitation("/uses: 1 to %d (omit it for no limit)", MaxLogOps)
	}
	if w.Nonce == "" || len(w.Nonce) > 64 {
		return "", badInvitation("/nonce: 1 to 64 bytes")
	}
	if h, err := base64.RawURLEncoding.DecodeString(w.SecretHash); err != nil || len(h) != sha256.Size {
		return "", badInvitation("/secretHash: want %d bytes in base64url", sha256.Size)
	}
	return forID, nil
}

// badInvitation is the error of an invitation whose content is wrong: it
// wraps ErrBadInvitation.
func badInvitation(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadInvitation}, args...)...)
}

// Token returns the invitation's token form; "" for an invitation without
// its secret (one read from a log).
func (inv *Invitation) Token() string {
	if inv.secret == nil {
		return ""
	}
	w := tokenWire{Invitation: inv.Raw, Secret: base64.RawURLEncoding.EncodeToString(inv.secret), Name: inv.Name, Addrs: inv.Addrs}
	b, err := json.Marshal(w)
	if err != nil {
		return "" // impossible: Raw is JSON
	}
	return InvitePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HasSecret reports whether inv came from a token whose secret matches
// the invitation (ParseInvitation), which is what proves that its holder
// was given the token.
func (inv *Invitation) HasSecret() bool {
	return inv.secret != nil && inv.secretHash != "" &&
		subtle.ConstantTimeCompare([]byte(hashSecret(inv.secret)), []byte(inv.secretHash)) == 1
}

// CheckJoin is what the admin's node runs before signing the add for a
// joiner: the invitation verifies and names this group, its holder proved
// possession (the token's secret matches), the group is not dissolved, the
// issuer is still an admin, it names the joiner (if it names anyone), it
// was not revoked, its uses are not spent, it was issued after the
// joiner's latest removal, it has not expired at now, and the group has
// room for the joiner.
func (l *Log) CheckJoin(inv *Invitation, joiner peer.ID, now time.Time) error {
	if inv == nil {
		return fmt.Errorf("%w: no invitation", ErrBadInvitation)
	}
	checked, err := parseInvitationJSON(inv.Raw) // never trust the fields alone
	if err != nil {
		return err
	}
	if inv.secret == nil || subtle.ConstantTimeCompare([]byte(hashSecret(inv.secret)), []byte(checked.secretHash)) != 1 {
		return fmt.Errorf("%w: the joiner did not prove it holds the token (no matching secret)", ErrNotAuthorized)
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
	case st.revoked[checked.ID]:
		return fmt.Errorf("%w: %s", ErrRevoked, checked.ID)
	case checked.Uses > 0 && st.used[checked.ID] >= checked.Uses:
		return fmt.Errorf("%w: %s (%d of %d uses)", ErrSpent, checked.ID, st.used[checked.ID], checked.Uses)
	case issuedBeforeRemoval(&st, checked, joiner):
		return fmt.Errorf("%w: the invitation was issued (%s) before %s was removed (%s)", ErrNotAuthorized,
			checked.Issued.Format(time.RFC3339), joiner, st.removed[joiner].Format(time.RFC3339))
	case st.Policy.MaxMembers > 0 && !st.IsMember(joiner) && len(st.Members) >= st.Policy.MaxMembers:
		return fmt.Errorf("%w: %d members, the policy's maximum", ErrGroupFull, len(st.Members))
	}
	return nil
}

// issuedBeforeRemoval reports whether inv was issued at or before p's
// latest effective removal from the group.
func issuedBeforeRemoval(st *State, inv *Invitation, p peer.ID) bool {
	at, ok := st.removed[p]
	return ok && !inv.Issued.After(at)
}
