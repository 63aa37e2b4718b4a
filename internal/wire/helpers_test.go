package wire_test

import "strings"

func contains(s, sub string) bool { return strings.Contains(s, sub) }
