package a2abridge

import (
	"encoding/json"
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
	if len(data) == 1 && len(texts) == 0 {
		v, err := lmosproto.ParseValue(data[0])
		if err != nil {
			return lmosproto.Value{}, rpcErr(CodeInvalidParams, "data part: %v", err)
		}
		return v, nil
	}
	if len(data) > 0 {
		return lmosproto.Value{}, rpcErr(CodeInvalidParams, "send either one data part or text parts, not %d data and %d text parts", len(data), len(texts))
	}
	text := strings.Join(texts, "\n")
	var s schemaShape
	if len(a.Input) > 0 {
		_ = json.Unmarshal(a.Input, &s) // a schema of another shape is handled as one without a type
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

// soleStringMember is the one string member of an object schema that a
// text fills: the only required member if it is a string, else the only
// member if it is a string; "" if there is none.
func soleStringMember(s schemaShape) string {
	isString := func(name string) bool {
		var p schemaShape
		return json.Unmarshal(s.Properties[name], &p) == nil && p.Type == "string"
	}
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
