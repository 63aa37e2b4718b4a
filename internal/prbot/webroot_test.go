package prbot

import "testing"

func TestWebRoot(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "https://github.com",
		"https://api.github.com":          "https://github.com",
		"https://ghe.example.com/api/v3":  "https://ghe.example.com",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com",
	} {
		if got := WebRoot(in); got != want {
			t.Errorf("WebRoot(%q) = %q, want %q", in, got, want)
		}
	}
}
