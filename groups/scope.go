package groups

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
)

// A member's scope (the Things of the group it may see and call) is
// recorded in the public log as digests of the Thing IDs, not the IDs:
// group-scoped Things are never announced in public, and the log would
// otherwise list their IDs. The digest is salted with the group ID, so the
// same Thing has unrelated digests in two groups; an outsider who guesses
// a Thing ID can still confirm it.

// scopePrefix starts every scope digest.
const scopePrefix = "sha256:"

// ScopeDigest is the digest that stands for thingID in the scopes of
// group: "sha256:" + base64url (no padding) of SHA-256 of the group ID, a
// zero byte and the Thing ID.
func ScopeDigest(group, thingID string) string {
	h := sha256.New()
	h.Write([]byte(group))
	h.Write([]byte{0})
	h.Write([]byte(thingID))
	return scopePrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// IsScopeDigest reports whether s has the form of a ScopeDigest.
func IsScopeDigest(s string) bool {
	b64, ok := strings.CutPrefix(s, scopePrefix)
	if !ok || len(b64) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(b64)
	return err == nil && len(b) == sha256.Size
}

// scopeDigests returns things with every entry that is not a digest
// replaced by its digest in group; nil stays nil.
func scopeDigests(group string, things []string) []string {
	if things == nil {
		return nil
	}
	out := make([]string, len(things))
	for i, t := range things {
		if IsScopeDigest(t) {
			out[i] = t
		} else {
			out[i] = ScopeDigest(group, t)
		}
	}
	return out
}

// inScope reports whether thingID is in the scope things of group (nil:
// every Thing).
func inScope(group string, things []string, thingID string) bool {
	return things == nil || slices.Contains(things, ScopeDigest(group, thingID))
}
