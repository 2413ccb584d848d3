package mqttgw

import (
	"fmt"
	"strings"

	"github.com/lmosnode/lmosnode/node/directory"
)

// Topic kinds below a Thing's level.
const (
	levelEvents     = "events"
	levelProperties = "properties"
	levelActions    = "actions"
	levelRead       = "read"
	levelWrite      = "write"
)

// EscapeTopicLevel makes s usable as one MQTT topic level: '%', '/', '+',
// '#' and U+0000 are percent-encoded, and so is a leading '$' (reserved for
// broker topics). See the package documentation.
func EscapeTopicLevel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' || c == '/' || c == '+' || c == '#' || c == 0,
			c == '$' && i == 0:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// UnescapeTopicLevel reverses EscapeTopicLevel. It fails on a malformed
// escape and on a level that EscapeTopicLevel cannot have produced.
func UnescapeTopicLevel(level string) (string, error) {
	if strings.ContainsAny(level, "/+#\x00") {
		return "", fmt.Errorf("mqttgw: topic level %q: contains a separator or wildcard", level)
	}
	if !strings.Contains(level, "%") {
		if strings.HasPrefix(level, "$") {
			return "", fmt.Errorf("mqttgw: topic level %q: unescaped leading '$'", level)
		}
		return level, nil
	}
	var b strings.Builder
	for i := 0; i < len(level); i++ {
		c := level[i]
		if c != '%' {
			if c == '$' && i == 0 {
				return "", fmt.Errorf("mqttgw: topic level %q: unescaped leading '$'", level)
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(level) {
			return "", fmt.Errorf("mqttgw: topic level %q: truncated escape", level)
		}
		var d byte
		switch level[i+1 : i+3] {
		case "25":
			d = '%'
		case "2F":
			d = '/'
		case "2B":
			d = '+'
		case "23":
			d = '#'
		case "00":
			d = 0
		case "24":
			if i != 0 {
				return "", fmt.Errorf("mqttgw: topic level %q: '$' escaped inside the level", level)
			}
			d = '$'
		default:
			return "", fmt.Errorf("mqttgw: topic level %q: unknown escape %q", level, level[i:i+3])
		}
		b.WriteByte(d)
		i += 2
	}
	return b.String(), nil
}

// topics builds and parses the topics of one gateway.
type topics struct {
	prefix string // "" or the prefix with a trailing '/'
}

func newTopics(prefix string) topics {
	if prefix != "" {
		prefix = strings.TrimSuffix(prefix, "/") + "/"
	}
	return topics{prefix: prefix}
}

func (t topics) thing(thingID string) string { return t.prefix + EscapeTopicLevel(thingID) }

// Event is the topic of a Thing's event.
func (t topics) event(thingID, name string) string {
	return t.thing(thingID) + "/" + levelEvents + "/" + EscapeTopicLevel(name)
}

// property is the (retained) topic of an observed property's values.
func (t topics) property(thingID, name string) string {
	return t.thing(thingID) + "/" + levelProperties + "/" + EscapeTopicLevel(name)
}

// requestFilters are the topic filters the gateway subscribes to for a
// Thing.
func (t topics) requestFilters(thingID string) []string {
	th := t.thing(thingID)
	return []string{
		th + "/" + levelActions + "/+",
		th + "/" + levelProperties + "/+/" + levelRead,
		th + "/" + levelProperties + "/+/" + levelWrite,
	}
}

// request is a parsed request topic.
type request struct {
	thingID string
	name    string
	kind    string // levelActions, levelRead or levelWrite
}

// parseRequest parses a request topic (see requestFilters).
func (t topics) parseRequest(topic string) (request, error) {
	rest, ok := strings.CutPrefix(topic, t.prefix)
	if !ok {
		return request{}, fmt.Errorf("mqttgw: topic %q: not under prefix %q", topic, t.prefix)
	}
	lv := strings.Split(rest, "/")
	var r request
	switch {
	case len(lv) == 3 && lv[1] == levelActions:
		r.kind = levelActions
	case len(lv) == 4 && lv[1] == levelProperties && (lv[3] == levelRead || lv[3] == levelWrite):
		r.kind = lv[3]
	default:
		return request{}, fmt.Errorf("mqttgw: topic %q: not a request topic", topic)
	}
	var err error
	if r.thingID, err = UnescapeTopicLevel(lv[0]); err != nil {
		return request{}, err
	}
	if r.name, err = UnescapeTopicLevel(lv[2]); err != nil {
		return request{}, err
	}
	if r.thingID == "" || r.name == "" {
		return request{}, fmt.Errorf("mqttgw: topic %q: empty thing ID or name", topic)
	}
	return r, nil
}

// validResponseTopic reports whether a consumer's response topic can be
// published to.
func validResponseTopic(s string) bool {
	return s != "" && !strings.ContainsAny(s, "+#\x00") && len(s) <= 65535
}

// Topic returns the topic of Thing thingID's levels, each escaped
// (EscapeTopicLevel), under the gateway's prefix: Topic(id, "properties",
// name, "read") is the read request topic of property name. It is how
// other parts of the node (the consumer view's MQTT forms) name the
// gateway's topics without copying the scheme.
func (g *Gateway) Topic(thingID string, levels ...string) string {
	var b strings.Builder
	b.WriteString(g.topics.thing(thingID))
	for _, l := range levels {
		b.WriteByte('/')
		b.WriteString(EscapeTopicLevel(l))
	}
	return b.String()
}

// BrokerURL returns the URL of the gateway's broker (Config.BrokerURL).
func (g *Gateway) BrokerURL() string { return g.cfg.BrokerURL }

// MQTT gives the consumer view the gateway's forms of the Thing of e
// (gateway.Broker): its broker and topic scheme, if the gateway exposes
// it (Deps.Exposes).
func (g *Gateway) MQTT(e directory.Entry) (string, func(levels ...string) string, bool) {
	if g.exposes == nil || !g.exposes(e) {
		return "", nil, false
	}
	id := e.ThingID
	return g.BrokerURL(), func(levels ...string) string { return g.Topic(id, levels...) }, true
}
