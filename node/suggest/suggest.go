// Package suggest finds what a user most likely meant: the nearest of
// the known words to a misspelt one, for "did you mean …?" in the
// messages of settings and flags.
package suggest

import (
	"strings"
	"unicode"
)

// Nearest returns the candidate closest to word: one with the same
// letters ignoring case, dots, dashes and underscores (dht.mode, DHT_MODE
// for dhtMode), else the one at the smallest edit distance if that is at
// most a third of word's length; "" when none is that close.
func Nearest(word string, candidates []string) string {
	want := fold(word)
	best, bestDist := "", len(want)/3+1
	for _, c := range candidates {
		got := fold(c)
		if got == want {
			return c
		}
		if d := distance(want, got); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// fold lowercases s and drops the separators people vary.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// distance is the optimal string alignment distance of a and b, in bytes:
// insertions, deletions, substitutions and swaps of two neighbours (mdsn
// for mdns) each count one.
func distance(a, b string) int {
	older := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], older[j-2]+1)
			}
		}
		older, prev, cur = prev, cur, older
	}
	return prev[len(b)]
}
