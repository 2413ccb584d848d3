package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/trust"
)

// The operator's trust list (docs/api.md#trust): Config.Trust at start,
// changed live through /api/v1/trust (package trustapi; lmosnode trust
// add|rm|ls), each change written back to the "trust" member of
// config.json. A publisher put on the deny list loses the records it had
// here at once.

// Trust returns the node's trust list.
func (n *Node) Trust() *trust.List { return n.trust }

// saveTrust writes the list c to the "trust" member of config.json, leaving
// every other member as written (members are re-ordered by name).
func saveTrust(home string, c trust.Config) error {
	path := filepath.Join(home, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	if c.Allow == nil && c.Prefer == nil && c.Deny == nil && !c.OnlyTrusted {
		delete(doc, "trust")
	} else {
		raw, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("trust: %w", err)
		}
		doc["trust"] = raw
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	if err := atomicfile.Write(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	return nil
}
