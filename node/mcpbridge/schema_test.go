package mcpbridge

import (
	"encoding/json"
	"testing"
)

func TestActionSchemas(t *testing.T) {
	cases := []struct {
		name, input, output string
		wantIn, wantOut     string
		inWraps, outWraps   bool
		noInput             bool
	}{
		{
			name:    "objects pass, WoT terms go",
			input:   `{"type":"object","@type":"x:Req","properties":{"t":{"type":"number","unit":"om:celsius","minimum":-40}},"required":["t"],"forms":[]}`,
			output:  `{"type":"object","properties":{"ok":{"type":"boolean","readOnly":true}}}`,
			wantIn:  `{"properties":{"t":{"minimum":-40,"type":"number"}},"required":["t"],"type":"object"}`,
			wantOut: `{"properties":{"ok":{"readOnly":true,"type":"boolean"}},"type":"object"}`,
		},
		{
			name:    "a string input and a number output are wrapped",
			input:   `{"type":"string","minLength":1}`,
			output:  `{"type":"number"}`,
			wantIn:  `{"properties":{"input":{"minLength":1,"type":"string"}},"required":["input"],"type":"object"}`,
			wantOut: `{"properties":{"output":{"type":"number"}},"type":"object"}`,
			inWraps: true, outWraps: true,
		},
		{
			name:    "no input, no output",
			wantIn:  `{"type":"object"}`,
			noInput: true,
		},
		{
			name:   "nested items, oneOf, additionalProperties",
			input:  `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","unit":"x"}},"o":{"oneOf":[{"type":"string","@type":"y"},{"type":"null"}]}},"additionalProperties":false}`,
			wantIn: `{"additionalProperties":false,"properties":{"l":{"items":{"type":"string"},"type":"array"},"o":{"oneOf":[{"type":"string"},{"type":"null"}]}},"type":"object"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := actionSchemas(json.RawMessage(c.input), json.RawMessage(c.output))
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(s.input)
			if string(in) != c.wantIn {
				t.Errorf("input schema %s, want %s", in, c.wantIn)
			}
			if c.wantOut == "" {
				if s.output != nil {
					t.Errorf("output schema %v, want none", s.output)
				}
			} else if out, _ := json.Marshal(s.output); string(out) != c.wantOut {
				t.Errorf("output schema %s, want %s", out, c.wantOut)
			}
			if s.inputWraps != c.inWraps || s.outputWraps != c.outWraps || s.noInput != c.noInput {
				t.Errorf("wraps in %v out %v, none %v", s.inputWraps, s.outputWraps, s.noInput)
			}
		})
	}
	if _, err := actionSchemas(json.RawMessage(`[1]`), nil); err == nil {
		t.Error("an array as data schema was accepted")
	}
}

// FuzzActionSchemas: any input is converted or refused, never a panic,
// and what is converted is an object schema.
func FuzzActionSchemas(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","unit":"x"}}}`, `{"type":"number"}`)
	f.Add(`{"items":[{"type":"string"}],"oneOf":[true,{"not":{}}]}`, `null`)
	f.Fuzz(func(t *testing.T, input, output string) {
		s, err := actionSchemas(json.RawMessage(input), json.RawMessage(output))
		if err != nil {
			return
		}
		if !isObjectSchema(s.input) || (s.output != nil && !isObjectSchema(s.output)) {
			t.Fatalf("not object schemas: %v %v", s.input, s.output)
		}
		if _, err := json.Marshal(s.input); err != nil {
			t.Fatal(err)
		}
	})
}
