package groups

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"

	record "github.com/libp2p/go-libp2p-record"
)

// Validator is the go-libp2p-record Validator of the "lmos-group"
// namespace: a value is valid under "/lmos-group/<id>" if ParseLog accepts
// it for that group. The zero value is ready to use and safe for concurrent
// use.
type Validator struct {
	// Ops, if set, is the node's cache of verified operations: a log put
	// again with one more operation costs one verification.
	Ops *OpCache
}

var _ record.Validator = Validator{}

// Validate reports whether value is a valid log record for key.
func (v Validator) Validate(key string, value []byte) error {
	if _, ok := valid.ops(key, value); ok {
		return nil
	}
	_, err := v.check(key, value)
	return err
}

// validCache remembers the last records found valid (by hash of key and
// value), so that kad-dht's Validate and Select of the same record, and the
// same record from several peers, are checked once: a full log takes a
// second of CPU to check.
type validCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]int // → number of operations
}

// validCacheSize bounds the cache; when full it starts over.
const validCacheSize = 64

var valid validCache

func cacheKey(key string, value []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(value)
	return [sha256.Size]byte(h.Sum(nil))
}

func (c *validCache) ops(key string, value []byte) (int, bool) {
	k := cacheKey(key, value)
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[k]
	return n, ok
}

func (c *validCache) remember(key string, value []byte, ops int) {
	k := cacheKey(key, value)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= validCacheSize {
		c.m = make(map[[sha256.Size]byte]int)
	}
	c.m[k] = ops
}

// Check validates value as the log record under key and returns it parsed.
func Check(key string, value []byte) (*Log, error) {
	return Validator{}.check(key, value)
}

// check is Check with the operations parsed through v.Ops.
func (v Validator) check(key string, value []byte) (*Log, error) {
	id, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	l, err := v.Ops.ParseLog(id, value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shorten(key), err)
	}
	valid.remember(key, value, len(l.entries))
	return l, nil
}

// Select returns the index of the best of values: the valid log with the
// most operations, among equals the lexicographically smallest bytes.
// Invalid values are skipped; it fails only if none is valid.
func (v Validator) Select(key string, values [][]byte) (int, error) {
	best, bestOps := -1, 0
	var firstErr error
	for i, value := range values {
		n, ok := valid.ops(key, value)
		if !ok {
			l, err := v.check(key, value)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("value %d: %w", i, err)
				}
				continue
			}
			n = len(l.entries)
		}
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
