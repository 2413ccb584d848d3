package directory

import (
	"slices"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Will it rain in Bonn tomorrow?", []string{"rain", "bonn", "tomorrow"}},
		{"weather-forecast", []string{"weather", "forecast"}},
		{"WeatherAgent", []string{"weatheragent", "weather", "agent"}},
		{"HTTPServer v2", []string{"httpserver", "http", "server", "v2"}},
		{"Wetter in Köln für Übermorgen", []string{"wetter", "köln", "übermorgen"}},
		{"ÜBER straße", []string{"über", "straße"}},
		{"gpt-4o, 2024-08-06", []string{"gpt", "4o", "2024", "08", "06"}},
		{"the of and", nil},
		{"  ...  ", nil},
		{strings.Repeat("x", maxTokenLen+1) + " ok", []string{"ok"}},
	}
	for _, tt := range tests {
		var got []string
		tokenize(tt.in, func(tok []byte) { got = append(got, string(tok)) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTermFreqsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 3 * maxDocTerms {
		b.WriteString("w")
		b.WriteString(strings.Repeat("a", i%20))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(string(rune('a' + i/26%26)))
		b.WriteString(" ")
	}
	tf := termFreqs(&summary{Title: "Big", Description: b.String() + " big"})
	dl := docLength(tf)
	if len(tf) > maxDocTerms {
		t.Fatalf("%d terms indexed, limit %d", len(tf), maxDocTerms)
	}
	if tf[0] != (termFreq{term: "big", tf: titleWeight + textWeight}) || dl == 0 {
		t.Fatalf("first term %+v, dl %d", tf[0], dl)
	}
}

func TestQueryTerms(t *testing.T) {
	got := queryTerms("Weather weather WEATHER in Bonn")
	if !slices.Equal(got, []string{"weather", "bonn"}) {
		t.Fatalf("queryTerms = %q", got)
	}
}

func FuzzTokenize(f *testing.F) {
	f.Add("WeatherAgent: forecast for Bonn, übermorgen!")
	f.Add("HTTPServerXYZabc")
	f.Fuzz(func(t *testing.T, s string) {
		tokenize(s, func(b []byte) {
			tok := string(b)
			if tok == "" || len(tok) > maxTokenLen || strings.ToLower(tok) != tok {
				t.Fatalf("bad token %q from %q", tok, s)
			}
		})
	})
}
