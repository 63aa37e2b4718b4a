package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseImage(t *testing.T) {
	const d = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	tests := []struct {
		name  string
		image string
		want  imageRef
	}{
		{"bare", "nginx", imageRef{Repository: "nginx"}},
		{"tag", "nginx:1.27", imageRef{Repository: "nginx", Tag: "1.27"}},
		{"port and path", "reg.example.com:5000/team/app:1.2.3", imageRef{Repository: "reg.example.com:5000/team/app", Tag: "1.2.3"}},
		{"port without tag", "reg.example.com:5000/team/app", imageRef{Repository: "reg.example.com:5000/team/app"}},
		{"tag and digest", "ghcr.io/acme/api:v2@" + d, imageRef{Repository: "ghcr.io/acme/api", Tag: "v2", Digest: d}},
		{"digest only", "ghcr.io/acme/api@" + d, imageRef{Repository: "ghcr.io/acme/api", Digest: d}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseImage(tt.image)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseImage(%q) (-want +got):\n%s", tt.image, diff)
			}
			if got.String() != tt.image {
				t.Errorf("String() = %q, want the input %q back", got.String(), tt.image)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		image, dockerName string
		want              bool
	}{
		{"reg.example.com/team/app:1", "app", true},
		{"reg.example.com/team/app:1", "team/app", true},
		{"app:1", "app", true},
		{"reg.example.com/team/myapp:1", "app", false},
		{"reg.example.com/app/sidecar:1", "app", false},
		{"reg.example.com:5000/app", "app", true},
	}
	for _, tt := range tests {
		t.Run(tt.image+"~"+tt.dockerName, func(t *testing.T) {
			if got := parseImage(tt.image).matches(tt.dockerName); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}
