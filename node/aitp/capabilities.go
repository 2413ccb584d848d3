package aitp

import (
	"encoding/json"
	"regexp"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// PropCapabilities is the TD member that declares the AITP capabilities
// an agent supports: an array of the capabilities' schema URLs, e.g.
// ["https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"]
// (README, "Vocabulary"). An agent that names none supports none: the node
// implements no capability itself (it holds no wallet and makes no
// payment), it passes the messages of the declared ones to the agent.
const PropCapabilities = "lmos:aitpCapabilities"

// Known are the schema URLs of the capabilities AITP defines with a
// schema (aitp-01 … aitp-05, v1.0.0).
var Known = []string{
	"https://aitp.dev/capabilities/aitp-01-payments/v1.0.0/schema.json",
	"https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json",
	"https://aitp.dev/capabilities/aitp-03-data-request/v1.0.0/schema.json",
	"https://aitp.dev/capabilities/aitp-04-near-wallet/v1.0.0/schema.json",
	"https://aitp.dev/capabilities/aitp-05-evm-wallet/v1.0.0/schema.json",
}

// capabilityPath is the end of a capability schema URL: its id and major
// version (§Capability Versioning: the version is in the URL).
var capabilityPath = regexp.MustCompile(`/([a-z0-9][a-z0-9-]*)/v(\d+)\.\d+\.\d+/schema\.json$`)

// capabilityKey is the id and major version of a capability schema URL,
// "" if it is not one.
func capabilityKey(url string) string {
	m := capabilityPath.FindStringSubmatch(url)
	if m == nil {
		return ""
	}
	return m[1] + "@" + m[2]
}

// Declared returns the capability schema URLs td declares
// (PropCapabilities); members that are not strings are skipped.
func Declared(td *lmosproto.TD) []string {
	var raw []json.RawMessage
	if json.Unmarshal(td.Extra[PropCapabilities], &raw) != nil {
		return nil
	}
	var out []string
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Unsupported returns the known capabilities that td does not declare.
func Unsupported(td *lmosproto.TD) []string {
	declared := map[string]bool{}
	for _, u := range Declared(td) {
		declared[capabilityKey(u)] = true
	}
	var out []string
	for _, u := range Known {
		if !declared[capabilityKey(u)] {
			out = append(out, u)
		}
	}
	return out
}

// messageCapability is the capability schema URL a message content
// string uses: the "$schema" member of a JSON object, "" for text.
func messageCapability(content string) string {
	if !strings.HasPrefix(strings.TrimSpace(content), "{") {
		return ""
	}
	var m struct {
		Schema string `json:"$schema"`
	}
	if json.Unmarshal([]byte(content), &m) != nil {
		return ""
	}
	return m.Schema
}

// supports reports whether td declares the capability of schema URL u
// (same id and major version).
func supports(td *lmosproto.TD, u string) bool {
	key := capabilityKey(u)
	if key == "" {
		return false
	}
	for _, d := range Declared(td) {
		if capabilityKey(d) == key {
			return true
		}
	}
	return false
}
