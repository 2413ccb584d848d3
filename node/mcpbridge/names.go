package mcpbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Tool names. MCP allows 1–128 characters of [A-Za-z0-9_.-]; common hosts
// accept only ^[A-Za-z0-9_-]{1,64}$, so names keep to that. The name of
// the tool of action a of Thing id published by p is
//
//	<title>__<action>_<hash>
//
// title and action sanitized (every other character becomes "_", runs
// collapse) and cut to titleMax and actionMax bytes, hash the first 10
// hex digits of SHA-256(p "\n" id "\n" a): stable for as long as the
// Thing keeps its publisher, id and action, and different for two
// actions of two Things even when titles and action names coincide.
const (
	titleMax  = 26
	actionMax = 24
	hashLen   = 10
	// MaxToolName is the longest name a tool gets.
	MaxToolName = titleMax + 2 + actionMax + 1 + hashLen
)

// ToolName returns the MCP tool name of action of Thing id published by
// publisher, titled title.
func ToolName(title, action string, publisher peer.ID, id string) string {
	sum := sha256.Sum256([]byte(string(publisher) + "\n" + id + "\n" + action))
	t := sanitize(title, titleMax)
	if t == "" {
		t = "thing"
	}
	a := sanitize(action, actionMax)
	if a == "" {
		a = "action"
	}
	return t + "__" + a + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// sanitize maps s to [A-Za-z0-9_-], at most max bytes, without leading or
// trailing "_".
func sanitize(s string, max int) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-'
		if !ok {
			if !under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		under = false
		b.WriteRune(r)
		if b.Len() >= max {
			break
		}
	}
	return strings.Trim(b.String(), "_")
}
