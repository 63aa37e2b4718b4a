// Package cli builds the cobra command trees of the reconciler and prbot
// binaries. The mains only run them; everything here can be tested by
// executing a command with arguments and captured output.
package cli
