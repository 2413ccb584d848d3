// Package structure holds no code, only tests that keep the module's shape
// honest: every package documents itself and imports only in the direction
// DESIGN.md fixes (proto ← dht, groups ← node ← cmd/lmosnode).
package structure
