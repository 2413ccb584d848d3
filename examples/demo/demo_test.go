package demo

import "testing"

func TestExamplesParse(t *testing.T) {
	for id, td := range map[string]string{
		WeatherID:  NewWeather().TD.ID,
		ChatID:     NewChat().TD.ID,
		GeocoderID: NewGeocoder().TD.ID,
	} {
		if td != id {
			t.Errorf("TD id %q, want %q", td, id)
		}
	}
}
