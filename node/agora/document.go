package agora

import (
	"crypto/sha1" //nolint:gosec // the Agora protocol names a document by its SHA1 (§8.2)
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Protocol is the Agora protocol document of one action of an agent.
type Protocol struct {
	// Action is the action the protocol calls.
	Action string
	// Text is the document; Hash its SHA1, hex (the protocolHash).
	Text string
	Hash string
}

// Protocols returns the protocol documents of td's actions, by action
// name. They are derived from the signed TD alone (its id, title and
// description, each action's name, title, description and input and
// output schemas in their JCS form), never from the node that renders
// them: every node renders the same text, so the same hash.
func Protocols(td *lmosproto.TD) []Protocol {
	names := make([]string, 0, len(td.Actions))
	for name := range td.Actions {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]Protocol, 0, len(names))
	for _, name := range names {
		text := Document(td, name)
		out = append(out, Protocol{Action: name, Text: text, Hash: Hash(text)})
	}
	return out
}

// Hash is the protocol hash of a document (§8.2): the SHA1 of its whole
// text, 40 lower-case hex digits.
func Hash(text string) string {
	sum := sha1.Sum([]byte(text)) //nolint:gosec // mandated by the spec, names a document, not a secret
	return hex.EncodeToString(sum[:])
}

// Document renders the protocol document of action name of td (§8.1):
// YAML metadata (name, description, multiround, and the Thing and action
// it calls), a line "---", and the specification in Markdown with the
// action's input and output schemas; "" when td has no such action.
func Document(td *lmosproto.TD, name string) string {
	a := td.Actions[name]
	if a == nil {
		return ""
	}
	title := td.Title
	if title == "" {
		title = td.ID
	}
	desc := firstOf(a.Description, a.Title, td.Description, "Calls the action "+name+" of "+title+".")
	var b strings.Builder
	b.WriteString("name: " + yamlString(title+": "+name) + "\n")
	b.WriteString("description: " + yamlString(desc) + "\n")
	b.WriteString("multiround: true\n")
	b.WriteString("lmos-thing: " + yamlString(td.ID) + "\n")
	b.WriteString("lmos-action: " + yamlString(name) + "\n")
	b.WriteString("---\n")
	b.WriteString("# " + title + ": action \"" + name + "\"\n\n")
	b.WriteString("This protocol calls the action \"" + name + "\" of the LMOS agent \"" + td.ID + "\" (" + title + ").\n")
	if td.Description != "" {
		b.WriteString("The agent: " + td.Description + "\n")
	}
	if a.Description != "" && a.Description != desc {
		b.WriteString("The action: " + a.Description + "\n")
	}
	b.WriteString("\n## Request\n\n")
	if len(a.Input) == 0 {
		b.WriteString("The action takes no input: send the body null (or leave it out).\n")
	} else {
		b.WriteString("The request body is the action's input, a JSON value (a string, an object, …) that MUST match this JSON Schema:\n\n")
		writeSchema(&b, a.Input)
	}
	b.WriteString("\n## Response\n\n")
	if len(a.Output) == 0 {
		b.WriteString("The response body is the action's output; the action declares no schema for it.\n")
	} else {
		b.WriteString("The response body is the action's output, which matches this JSON Schema:\n\n")
		writeSchema(&b, a.Output)
	}
	b.WriteString("When the output comes in several parts (running statuses), the body is the final output, else the array of the parts.\n" +
		"An input that does not match the schema, or a failure of the agent, is answered with status \"success\" and the body {\"error\": \"<what went wrong>\"}.\n")
	b.WriteString("\n## Multi-round\n\n" +
		"A request with \"multiround\": true opens an LMOS streaming session of the action: its body is the first input chunk, " +
		"and each request to {base}/conversations/{conversationId} sends the next. Each response body holds the output chunks " +
		"the agent sent since the previous response (one chunk as itself, several as an array), waiting for at least one. " +
		"A request with \"lmos:end\": true ends the session's input (its body, if not null, is a last chunk) and is answered " +
		"with the rest of the output once the session ended. An action that is not a session answers each request with one invocation.\n")
	return b.String()
}

// writeSchema writes a data schema in its JCS form (RFC 8785), fenced:
// the same bytes whatever their form in the TD on a given node.
func writeSchema(b *strings.Builder, schema json.RawMessage) {
	canon, err := lmosproto.Canonicalize(schema)
	if err != nil {
		canon = schema // a signed TD's schemas are JSON; kept as signed otherwise
	}
	b.WriteString("```json\n" + string(canon) + "\n```\n")
}

// yamlString quotes s as a YAML double-quoted scalar (a JSON string is
// one).
func yamlString(s string) string {
	q, _ := json.Marshal(s) // a string always encodes
	return string(q)
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
