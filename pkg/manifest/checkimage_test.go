package manifest

import "testing"

func TestCheckImage(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ name, tag, digest, want string }{
		{"tag", "1.6.0", "", ""},
		{"tag and digest", "v1_2-rc.3", digest, ""},
		{"empty tag", "", "", "empty dockerTag; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"},
		{"tag starting with a dot", ".1", "", `invalid dockerTag ".1"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'`},
		{"tag with a quote", `1"2`, "", `invalid dockerTag "1\"2"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'`},
		{"upper-case digest", "1", "sha256:" + "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", `invalid dockerDigest "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123…; expected "sha256:" followed by 64 lowercase hexadecimal digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := CheckImage(tc.tag, tc.digest); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckImage(%q, %q) = %q, want %q", tc.tag, tc.digest, got, tc.want)
			}
		})
	}
}
