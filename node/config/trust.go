package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lmosnode/lmosnode/node/trust"
)

// WriteTrust writes the list c to the "trust" member of config.json, leaving
// every other member as written (members are re-ordered by name).
func WriteTrust(home string, c trust.Config) error {
	path := filepath.Join(home, File)
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
	if err := writeFile(path, append(out, '\n')); err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	return nil
}
