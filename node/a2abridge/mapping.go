package a2abridge

import (
	"encoding/json"
	"slices"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// actionOf picks the action of td that a message invokes: the one named
// by metadata "lmos:action" (of the message, else of the request), else
// the agent's only action.
func actionOf(td *lmosproto.TD, metadata ...json.RawMessage) (string, *RPCError) {
	if name := metaString(metaAction, metadata...); name != "" {
		if _, ok := td.Actions[name]; !ok {
			return "", rpcErr(CodeInvalidParams, "agent %q has no action %q (metadata %s); its actions: %s", td.ID, name, metaAction, strings.Join(actionNames(td), ", "))
		}
		return name, nil
	}
	names := actionNames(td)
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", rpcErr(CodeUnsupportedOperation, "agent %q has no action to send a message to", td.ID)
	}
	return "", rpcErr(CodeInvalidParams, "agent %q has %d actions (%s): name one with message metadata %q", td.ID, len(names), strings.Join(names, ", "), metaAction)
}

// schemaShape is what inputOf reads of a data schema.
type schemaShape struct {
	Type       any                        `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// inputOf maps the parts of a message to the input of action a:
//
//   - a message of one data part: its data;
//   - one data part and text parts (mixed): the data, an object, with the
//     text (joined with LF) as the one string property of the input
//     schema that the data does not set (of several, the only required
//     one); refused when there is no such property or more than one
//     (withText);
//   - text parts (joined with LF): the text for an action whose input is a
//     string or has no schema; for an object input, the text parsed as a
//     JSON object, else an object with the text as the one string member
//     the schema requires (or has);
//   - any other input type: the text parsed as JSON.
//
// File parts (raw, url) are refused. The engine checks the result against
// the action's schema.
func inputOf(a *lmosproto.ActionAffordance, name string, parts []Part) (lmosproto.Value, *RPCError) {
	var texts []string
	var data []json.RawMessage
	for _, p := range parts {
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case p.Data != nil:
			data = append(data, p.Data)
		default:
			return lmosproto.Value{}, rpcErr(CodeContentTypeNotSupported, "file parts (raw, url) are not supported; send text or data parts")
		}
	}
	text := strings.Join(texts, "\n")
	var s schemaShape
	if len(a.Input) > 0 {
		_ = json.Unmarshal(a.Input, &s) // a schema of another shape is handled as one without a type
	}
	switch {
	case len(data) > 1:
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "send one data part (and text parts if you like), not %d data parts", len(data))
	case len(data) == 1 && strings.TrimSpace(text) != "":
		return withText(s, name, data[0], text)
	case len(data) == 1:
		v, err := lmosproto.ParseValue(data[0])
		if err != nil {
			return lmosproto.Value{}, rpcErr(CodeInvalidParams, "data part: %v", err)
		}
		if s.Type == "string" && !strings.HasPrefix(strings.TrimSpace(string(data[0])), `"`) {
			return lmosproto.Value{}, rpcErr(CodeContentTypeNotSupported, "action %q takes text: send a text part", name)
		}
		return v, nil
	}
	typ, _ := s.Type.(string)
	switch typ {
	case "", "string":
		return lmosproto.StringValue(text), nil
	case "object":
		if v, err := lmosproto.ParseValue([]byte(text)); err == nil && strings.HasPrefix(strings.TrimSpace(text), "{") {
			return v, nil
		}
		if m := soleStringMember(s); m != "" {
			v, _ := lmosproto.ValueOf(map[string]string{m: text}) // a string map always encodes
			return v, nil
		}
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "action %q takes an object: send a data part, or text that is a JSON object", name)
	}
	v, err := lmosproto.ParseValue([]byte(text))
	if err != nil {
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "action %q takes a %s: send a data part, or its JSON as text", name, typ)
	}
	return v, nil
}

// withText is the input of a message of one data part and text: the
// data, a JSON object, with the text as its member m, where m is the one
// string property of the object schema s that the data does not set, or,
// of several such, the only required one.
func withText(s schemaShape, name string, data json.RawMessage, text string) (lmosproto.Value, *RPCError) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "a message with a data part and text: the data must be a JSON object for the text to go into one of its members")
	}
	var free, required []string
	for p := range s.Properties {
		if _, set := obj[p]; set || !s.isString(p) {
			continue
		}
		free = append(free, p)
		if slices.Contains(s.Required, p) {
			required = append(required, p)
		}
	}
	slices.Sort(free)
	var m string
	switch {
	case len(free) == 1:
		m = free[0]
	case len(required) == 1:
		m = required[0]
	default:
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "a message with a data part and text: the text goes into the one string property of the input of action %q that the data does not set, and it has %d (%s); put the text into the data",
			name, len(free), strings.Join(free, ", "))
	}
	obj[m] = mustRaw(text)
	v, err := lmosproto.ParseValue(mustRaw(obj))
	if err != nil {
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "data part: %v", err)
	}
	return v, nil
}

// isString reports whether property name of s is a string.
func (s schemaShape) isString(name string) bool {
	var p schemaShape
	return json.Unmarshal(s.Properties[name], &p) == nil && p.Type == "string"
}

// soleStringMember is the one string member of an object schema that a
// text fills: the only required member if it is a string, else the only
// member if it is a string; "" if there is none.
func soleStringMember(s schemaShape) string {
	isString := s.isString
	switch {
	case len(s.Required) == 1:
		if isString(s.Required[0]) {
			return s.Required[0]
		}
	case len(s.Required) == 0 && len(s.Properties) == 1:
		for name := range s.Properties {
			if isString(name) {
				return name
			}
		}
	}
	return ""
}
