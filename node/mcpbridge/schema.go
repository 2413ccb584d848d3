package mcpbridge

import (
	"encoding/json"
	"fmt"
)

// A TD's data schemas are JSON Schema plus WoT annotations (TD 1.1 §5.3.2).
// MCP wants plain JSON Schema objects: toolSchema keeps the JSON Schema
// keywords, recursively, and drops the rest (@type, unit, forms, …).

// schemaKeywords are the keywords kept, with how their value nests
// schemas.
var schemaKeywords = map[string]nesting{
	"type": flat, "title": flat, "description": flat, "enum": flat, "const": flat, "default": flat,
	"format": flat, "pattern": flat, "minimum": flat, "maximum": flat, "exclusiveMinimum": flat,
	"exclusiveMaximum": flat, "multipleOf": flat, "minLength": flat, "maxLength": flat,
	"minItems": flat, "maxItems": flat, "uniqueItems": flat, "required": flat, "readOnly": flat,
	"writeOnly": flat, "contentEncoding": flat, "contentMediaType": flat, "examples": flat,
	"minProperties": flat, "maxProperties": flat,
	"properties": schemaMap, "items": schemaOrList, "additionalProperties": schemaOrBool,
	"oneOf": schemaList, "anyOf": schemaList, "allOf": schemaList, "not": oneSchema,
}

type nesting int

const (
	flat nesting = iota
	oneSchema
	schemaMap
	schemaList
	schemaOrList
	schemaOrBool
)

// cleanSchema returns the JSON Schema of the TD data schema raw.
func cleanSchema(raw json.RawMessage) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("data schema: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data schema: a JSON object expected, got %s", raw)
	}
	return clean(m), nil
}

func clean(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		n, ok := schemaKeywords[k]
		if !ok {
			continue
		}
		switch n {
		case flat:
			out[k] = v
		case oneSchema, schemaOrBool:
			if s, ok := v.(map[string]any); ok {
				out[k] = clean(s)
			} else if b, ok := v.(bool); ok && n == schemaOrBool {
				out[k] = b
			}
		case schemaMap:
			if props, ok := v.(map[string]any); ok {
				c := make(map[string]any, len(props))
				for name, p := range props {
					if s, ok := p.(map[string]any); ok {
						c[name] = clean(s)
					}
				}
				out[k] = c
			}
		case schemaList, schemaOrList:
			if s, ok := v.(map[string]any); ok && n == schemaOrList {
				out[k] = clean(s)
			} else if list, ok := v.([]any); ok {
				c := make([]any, 0, len(list))
				for _, e := range list {
					if s, ok := e.(map[string]any); ok {
						c = append(c, clean(s))
					}
				}
				out[k] = c
			}
		}
	}
	return out
}

// wrapMember is the member that holds a value whose schema is not an
// object: MCP tool arguments and structured results are JSON objects.
const wrapMember = "input"

// outputMember holds a non-object output in structuredContent.
const outputMember = "output"

// ioSchemas are the MCP schemas of a TD action and how its values map.
type ioSchemas struct {
	input       map[string]any
	inputWraps  bool // arguments are {"input": value}
	noInput     bool // the action takes no input
	output      map[string]any
	outputWraps bool // structuredContent is {"output": value}
}

// actionSchemas converts an action's input and output data schemas: an
// object schema is the tool's schema as it is; another schema is wrapped
// as the one member "input" (required) or "output"; no input schema is an
// empty object, no output schema no outputSchema.
func actionSchemas(input, output json.RawMessage) (ioSchemas, error) {
	var s ioSchemas
	if len(input) == 0 || string(input) == "null" {
		s.input, s.noInput = map[string]any{"type": "object"}, true
	} else {
		in, err := cleanSchema(input)
		if err != nil {
			return s, fmt.Errorf("input: %w", err)
		}
		if isObjectSchema(in) {
			s.input = in
		} else {
			s.input = map[string]any{"type": "object", "properties": map[string]any{wrapMember: in}, "required": []any{wrapMember}}
			s.inputWraps = true
		}
	}
	if len(output) > 0 && string(output) != "null" {
		out, err := cleanSchema(output)
		if err != nil {
			return s, fmt.Errorf("output: %w", err)
		}
		if isObjectSchema(out) {
			s.output = out
		} else {
			s.output = map[string]any{"type": "object", "properties": map[string]any{outputMember: out}}
			s.outputWraps = true
		}
	}
	return s, nil
}

// isObjectSchema: MCP needs "type": "object" at the top.
func isObjectSchema(s map[string]any) bool {
	t, _ := s["type"].(string)
	return t == "object"
}
