package mcpbridge

import (
	"regexp"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

var hostToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	const p1, p2 = peer.ID("peer-one"), peer.ID("peer-two")
	cases := []struct {
		title, action string
		prefix        string
	}{
		{"Weather Agent", "forecast", "Weather_Agent__forecast_"},
		{"Wetter-Dienst (München)", "vorhersage/7-tage", "Wetter-Dienst_M_nchen__vorhersage_7-tage_"},
		{"", "", "thing__action_"},
		{"???", "!!!", "thing__action_"},
		{strings.Repeat("long title ", 20), strings.Repeat("action", 20), "long_title_long_title_long__actionactionactionaction_"},
	}
	for _, c := range cases {
		got := ToolName(c.title, c.action, p1, "urn:x")
		if !hostToolName.MatchString(got) || len(got) > MaxToolName {
			t.Errorf("ToolName(%q, %q) = %q: not a name hosts accept", c.title, c.action, got)
		}
		if !strings.HasPrefix(got, c.prefix) || len(got) != len(c.prefix)+hashLen {
			t.Errorf("ToolName(%q, %q) = %q, want %q + %d hex digits", c.title, c.action, got, c.prefix, hashLen)
		}
		if again := ToolName(c.title, c.action, p1, "urn:x"); again != got {
			t.Errorf("ToolName is not stable: %q, %q", got, again)
		}
	}
	// Same sanitized title and action, another publisher, id or action:
	// another name.
	base := ToolName("T", "a_b", p1, "urn:x")
	for _, other := range []string{
		ToolName("T", "a_b", p2, "urn:x"),
		ToolName("T", "a_b", p1, "urn:y"),
		ToolName("T", "a b", p1, "urn:x"),
		ToolName("T", "a/b", p1, "urn:x"),
	} {
		if other == base {
			t.Errorf("two actions share the name %q", base)
		}
	}
}
