package groups

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMessage(t *testing.T) {
	good := map[string]string{
		"op":    `{"op":{"type":"lmos:GroupOp"}}`,
		"post":  `{"post":{"body":"hello","sent":"2026-11-21T10:00:00Z"}}`,
		"json":  `{"post":{"body":{"a":[1,2]},"sent":"2026-11-21T10:00:00.5+01:00"}}`,
		"thing": `{"thing":{"id":"urn:x"}}`,
	}
	for name, data := range good {
		m, err := ParseMessage([]byte(data))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n := 0
		if m.Op != nil {
			n++
		}
		if m.Post != nil {
			n++
		}
		if m.Thing != nil {
			n++
		}
		if n != 1 {
			t.Errorf("%s: %d members set", name, n)
		}
	}
	bad := map[string]string{
		"two members":  `{"op":{},"post":{"body":1,"sent":"2026-11-21T10:00:00Z"}}`,
		"none":         `{}`,
		"unknown":      `{"chat":"hi"}`,
		"op not obj":   `{"op":"x"}`,
		"thing array":  `{"thing":[1]}`,
		"post no sent": `{"post":{"body":"x"}}`,
		"post extra":   `{"post":{"body":"x","sent":"2026-11-21T10:00:00Z","from":"me"}}`,
		"post bad ts":  `{"post":{"body":"x","sent":"yesterday"}}`,
		"null op":      `{"op":null}`,
		"not json":     `hi`,
		"big op":       `{"op":{"x":"` + strings.Repeat("a", MaxOpSize) + `"}}`,
		"big post":     `{"post":{"body":"` + strings.Repeat("a", MaxPostSize) + `","sent":"2026-11-21T10:00:00Z"}}`,
		"huge":         `{"thing":{"x":"` + strings.Repeat("a", MaxMessageSize) + `"}}`,
	}
	for name, data := range bad {
		if _, err := ParseMessage([]byte(data)); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: %v, want ErrBadMessage", name, err)
		}
	}
}
