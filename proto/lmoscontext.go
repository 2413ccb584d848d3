package proto

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// BindLMOS returns td's @context with the "lmos" prefix bound to
// ContextLMOS when td uses an lmos: term (lmos:seq included) and its
// @context does not bind the prefix yet: a string @context becomes an
// array of it and the binding, an array gets the binding appended as a
// last element {"lmos": ContextLMOS}. Otherwise it returns @context
// unchanged, also when it binds "lmos" to another IRI (ValidateTD refuses
// that) or is neither a string nor an array (ValidateTD refuses that too).
//
// This is how a node that adds LMOS terms to a plain TD 1.1 document (it
// always adds lmos:seq when it signs) keeps the document valid: the terms
// it adds come with the binding they need.
func (td *TD) BindLMOS() (json.RawMessage, error) {
	doc, err := td.MarshalJSON()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("bind lmos prefix: %w", err)
	}
	if _, _, used := firstLMOSTerm(obj); !used {
		return td.Context, nil
	}
	if _, _, bound := lmosBinding(obj[memberContext]); bound {
		return td.Context, nil
	}
	binding := json.RawMessage(`{"` + PrefixLMOS + `":"` + ContextLMOS + `"}`)
	var list []json.RawMessage
	switch obj[memberContext].(type) {
	case string:
		list = []json.RawMessage{compactJSON(td.Context), binding}
	case []any:
		if err := json.Unmarshal(td.Context, &list); err != nil {
			return nil, fmt.Errorf("bind lmos prefix: @context: %w", err)
		}
		list = append(list, binding)
	default:
		return td.Context, nil
	}
	out, err := marshalNoEscape(list)
	if err != nil {
		return nil, fmt.Errorf("bind lmos prefix: @context: %w", err)
	}
	return out, nil
}
