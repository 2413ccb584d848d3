package groups

import (
	"bytes"
	"fmt"

	record "github.com/libp2p/go-libp2p-record"
)

// Validator is the go-libp2p-record Validator of the "lmos-group"
// namespace: a value is valid under "/lmos-group/<id>" if ParseLog accepts
// it for that group. The zero value is ready to use and safe for concurrent
// use.
type Validator struct{}

var _ record.Validator = Validator{}

// Validate reports whether value is a valid log record for key.
func (Validator) Validate(key string, value []byte) error {
	_, err := Check(key, value)
	return err
}

// Check validates value as the log record under key and returns it parsed.
func Check(key string, value []byte) (*Log, error) {
	id, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	l, err := ParseLog(id, value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shorten(key), err)
	}
	return l, nil
}

// Select returns the index of the best of values: the valid log with the
// most operations, among equals the lexicographically smallest bytes.
// Invalid values are skipped; it fails only if none is valid.
func (Validator) Select(key string, values [][]byte) (int, error) {
	best, bestOps := -1, 0
	var firstErr error
	for i, value := range values {
		l, err := Check(key, value)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("value %d: %w", i, err)
			}
			continue
		}
		n := len(l.entries)
		if best < 0 || n > bestOps || n == bestOps && bytes.Compare(value, values[best]) < 0 {
			best, bestOps = i, n
		}
	}
	if best < 0 {
		if firstErr == nil {
			return 0, fmt.Errorf("select %s: no values", shorten(key))
		}
		return 0, fmt.Errorf("select %s: no valid value: %w", shorten(key), firstErr)
	}
	return best, nil
}
