package directory

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Free-text search: a small tokenizer and BM25 ranking.
//
// A token is a maximal run of Unicode letters and digits, lowercased;
// English and German stopwords are dropped, and so are tokens longer than
// maxTokenLen bytes (hashes, base64 blobs). The text of a Thing is its
// title, description and, per capability, the id, description and
// examples. Fields are weighted by repeating their tokens (BM25F-style term
// frequencies): a word in the title counts titleWeight times, a word of a
// capability id capabilityWeight times.

const (
	titleWeight      = 3
	capabilityWeight = 2
	textWeight       = 1

	// maxTokenLen bounds one token, in bytes.
	maxTokenLen = 64
	// maxDocTerms bounds the distinct terms indexed per Thing, so a
	// publisher cannot blow up the index with one huge description.
	maxDocTerms = 512
	// maxQueryTerms bounds the distinct terms of one query.
	maxQueryTerms = 16

	// BM25 parameters, the common defaults.
	bm25K1 = 1.2
	bm25B  = 0.75
)

// stopwords are dropped from documents and queries.
var stopwords = func() map[string]struct{} {
	words := strings.Fields(`
		a about an and are as at be by can do does for from has have how i if
		in into is it its me my not of on or our so than that the their them
		then there these this to up us was we what when where which who will
		with you your
		am auf aus bei das dem den der des die ein eine einen einer es für im
		ist mit nach oder sich sie und von was wie zu zum zur`)
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
		maxStopword = max(maxStopword, len(w))
	}
	return m
}()

// maxStopword is the length in bytes of the longest stopword (set by the
// initializer of stopwords).
var maxStopword int

func isStopword(tok []byte) bool {
	if len(tok) > maxStopword {
		return false
	}
	_, stop := stopwords[string(tok)]
	return stop
}

// tokenize calls fn with every indexable token of s, in order. A word
// written in camel case ("WeatherAgent", "HTTPServer") gives its parts
// ("weather", "agent") after the whole word ("weatheragent"). tok is only
// valid during the call.
func tokenize(s string, fn func(tok []byte)) {
	var wordBuf [64]rune
	var lowerBuf [maxTokenLen + utf8.UTFMax]byte
	word := wordBuf[:0]
	emit := func(w []rune) {
		lower := lowerBuf[:0]
		for _, r := range w {
			switch {
			case 'A' <= r && r <= 'Z':
				lower = append(lower, byte(r)+'a'-'A')
			case r < utf8.RuneSelf:
				lower = append(lower, byte(r))
			default:
				lower = utf8.AppendRune(lower, unicode.ToLower(r))
			}
			if len(lower) > maxTokenLen {
				return
			}
		}
		if !isStopword(lower) {
			fn(lower)
		}
	}
	flush := func() {
		if len(word) == 0 {
			return
		}
		emit(word)
		start := 0
		for i := 1; i < len(word); i++ {
			if camelBoundary(word, i) {
				emit(word[start:i])
				start = i
			}
		}
		if start > 0 {
			emit(word[start:])
		}
		word = word[:0]
	}
	for _, r := range s {
		if isWordRune(r) {
			word = append(word, r)
			continue
		}
		flush()
	}
	flush()
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// camelBoundary reports whether a camel-case word part starts at w[i]: an
// upper-case letter after a lower-case one ("weatherAgent"), or the last
// capital of an acronym before a lower-case letter ("HTTPServer").
func camelBoundary(w []rune, i int) bool {
	if !unicode.IsUpper(w[i]) {
		return false
	}
	prev := w[i-1]
	return unicode.IsLower(prev) ||
		unicode.IsUpper(prev) && i+1 < len(w) && unicode.IsLower(w[i+1])
}

// termFreq is a term of a Thing's text and its weighted frequency.
type termFreq struct {
	term string
	tf   uint32
	// id is the term's number plus one as index.resolve found it, 0 if
	// not looked up or new; index.add checks it before using it.
	id uint32
}

// termFreqs returns the distinct terms of a Thing's text with their
// weighted frequencies (docLength sums them).
func termFreqs(s *summary) []termFreq {
	// Sized for a typical TD (tens of distinct terms) to spare regrowth.
	var (
		tfs = make([]termFreq, 0, 64)
		at  = make(map[string]int, 64)
	)
	add := func(text string, w uint32) {
		tokenize(text, func(tok []byte) {
			if i, ok := at[string(tok)]; ok {
				tfs[i].tf += w
			} else if len(tfs) < maxDocTerms {
				term := string(tok)
				at[term] = len(tfs)
				tfs = append(tfs, termFreq{term: term, tf: w})
			}
		})
	}
	add(s.Title, titleWeight)
	add(s.Description, textWeight)
	for _, c := range s.Capabilities {
		add(c.ID, capabilityWeight)
		add(c.Description, textWeight)
		for _, x := range c.Examples {
			add(x, textWeight)
		}
	}
	return tfs
}

// docLength is the weighted length of a text whose term frequencies are
// tf (BM25's document length).
func docLength(tf []termFreq) uint32 {
	var dl uint32
	for _, f := range tf {
		dl += f.tf
	}
	return dl
}

// queryTerms returns the distinct tokens of a query, at most maxQueryTerms.
func queryTerms(text string) []string {
	var terms []string
	tokenize(text, func(tok []byte) {
		if len(terms) < maxQueryTerms && !slices.Contains(terms, string(tok)) {
			terms = append(terms, string(tok))
		}
	})
	return terms
}

// bm25IDF is the inverse document frequency of a term found in df of n
// documents (the Lucene form, never negative).
func bm25IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// bm25Term is one term's contribution to a document's score.
func bm25Term(idf float64, tf, dl uint32, avgdl float64) float64 {
	f := float64(tf)
	return idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(dl)/avgdl))
}
