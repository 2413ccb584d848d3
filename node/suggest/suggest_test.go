package suggest

import "testing"

func TestNearest(t *testing.T) {
	words := []string{"mdns", "listen", "api", "dhtMode", "apiLimits.bodyTimeout", "relay"}
	for word, want := range map[string]string{
		"mdsn":                 "mdns",
		"dht.mode":             "dhtMode",
		"DHT_MODE":             "dhtMode",
		"lisen":                "listen",
		"apiLimits.bodyTimout": "apiLimits.bodyTimeout",
		"frobnicate":           "",
		"x":                    "",
	} {
		if got := Nearest(word, words); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
}
