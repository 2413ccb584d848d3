package proto

import "unicode/utf8"

// decodeJSONDirect decodes a JSON message straight into m, without the
// tree of parseJSONTree: member values are read in place, scalars in
// payload members are canonicalised as they are read (objects and arrays
// in payloads still go through a tree, for their sorted keys). It handles
// the messages every transport carries on each call and gives up (false,
// m untouched) on anything else: invalid or unusual input (a duplicate
// member, two names of one field with different values, a fraction as
// status, an unknown message type, …), which the tree decoder then
// accepts or rejects with its deterministic error. So the two paths accept the same messages and
// produce the same Message (TestDirectDecodeMatchesTree, FuzzDecodeJSON).
func decodeJSONDirect(data []byte, m *Message) bool {
	if !utf8.Valid(data) {
		return false
	}
	p := jsonParser{data: data, maxDepth: MaxDepth + 1}
	p.skipSpace()
	if p.peek() != '{' {
		return false
	}
	p.pos++
	var out Message
	var seenBuf [24][]byte
	seen := seenBuf[:0]
	p.skipSpace()
	if p.peek() == '}' {
		return false // no messageType
	}
	for {
		p.skipSpace()
		if p.peek() != '"' {
			return false
		}
		key, ok := p.plainKey()
		if !ok {
			return false
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		p.skipSpace()
		if p.peek() != ':' {
			return false
		}
		p.pos++
		p.skipSpace()
		if !p.directMember(&out, key) {
			return false
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
		default:
			return false
		}
		break
	}
	p.skipSpace()
	if p.pos != len(data) || out.Type == "" {
		return false
	}
	*m = out
	return true
}

// plainKey reads a member name without escapes, in place.
func (p *jsonParser) plainKey() ([]byte, bool) {
	start := p.pos + 1
	for i := start; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			return p.data[start:i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// typeByName interns the known message types.
var typeByName = func() map[string]MessageType {
	m := make(map[string]MessageType, len(msgTypes))
	for t := range msgTypes {
		m[string(t)] = t
	}
	return m
}()

// directMember reads the value of member key into m.
func (p *jsonParser) directMember(m *Message, key []byte) bool {
	var dst *string
	aliased := false // a field more than one member name sets
	switch string(key) {
	case "thingID", "thingId":
		dst, aliased = &m.ThingID, true
	case "messageID", "messageId":
		dst, aliased = &m.MessageID, true
	case "correlationID", "correlationId":
		dst, aliased = &m.CorrelationID, true
	case "name", "action", "event":
		dst, aliased = &m.Name, true
	case "messageType":
		if p.peek() != '"' {
			return false
		}
		name, ok := p.plainKey()
		if !ok {
			return false
		}
		m.Type, ok = typeByName[string(name)]
		return ok
	case "status":
		// RFC 7807's number form: an integer keeps its literal
		if c := p.peek(); c == '-' || (c >= '0' && c <= '9') {
			n, err := p.number()
			if err != nil || !n.(jsonNumber).isInt {
				return false
			}
			m.Status = n.(jsonNumber).lit
			return true
		}
		dst = &m.Status
	case "reason", "timestamp", "traceparent", "tracestate", "type", "title", "detail", "instance":
		dst = m.plainStringMember(string(key))
	case "stream":
		return p.directBool(&m.Stream)
	case "oneWay":
		return p.directBool(&m.OneWay)
	case "data":
		return p.directValue(&m.Data)
	case "input":
		return p.directValue(&m.Input)
	case "output":
		return p.directValue(&m.Output)
	case "value":
		return p.directValue(&m.Value)
	default:
		var v Value
		if !p.directValue(&v) {
			return false
		}
		if m.Extensions == nil {
			m.Extensions = make(map[string]Value)
		}
		m.Extensions[string(key)] = v
		return true
	}
	s, ok := p.directString()
	switch {
	case !ok:
		return false
	case aliased && *dst != "" && s != "" && s != *dst:
		return false // conflicting names: the tree decoder's error
	case s != "":
		*dst = s
	}
	return true
}

// directString reads a string member; null is absent ("").
func (p *jsonParser) directString() (string, bool) {
	switch p.peek() {
	case '"':
		s, err := p.string()
		return s, err == nil
	case 'n':
		return "", p.literal("null") == nil
	}
	return "", false
}

// directBool reads a boolean member; null is absent (false).
func (p *jsonParser) directBool(dst *bool) bool {
	switch p.peek() {
	case 't':
		*dst = true
		return p.literal("true") == nil
	case 'f':
		*dst = false
		return p.literal("false") == nil
	case 'n':
		*dst = false
		return p.literal("null") == nil
	}
	return false
}

// directValue reads a payload member as canonical JSON text.
func (p *jsonParser) directValue(dst *Value) bool {
	var raw []byte
	switch c := p.peek(); {
	case c == '"':
		s, err := p.string()
		if err != nil {
			return false
		}
		raw = appendJSONString(make([]byte, 0, len(s)+2), s)
	case c == 't' || c == 'f' || c == 'n':
		v, err := p.value(1)
		if err != nil {
			return false
		}
		raw = appendCanonJSON(nil, v)
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := p.number()
		if err != nil {
			return false
		}
		raw = []byte(n.(jsonNumber).lit)
	default: // an object or an array: through a tree, for sorted keys
		v, err := p.value(1)
		if err != nil {
			return false
		}
		raw = appendCanonJSON(nil, v)
	}
	*dst = Value{raw: raw}
	return true
}
