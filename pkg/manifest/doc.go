// Package manifest parses, validates and resolves the deployment manifests of
// a Stagehand manifests repository (the services RFC).
//
// Resolve reads <root>/environments/<env>/manifest.json and its includes from
// any fs.FS (a directory, a git tree) and returns the environment's effective
// services, the overrides between files, warnings and the include tree
// (Layout). Included services come before the including file's own, in
// include order; when a name repeats across files the later entry wins and
// stands where it was written. A file included from two places (a diamond)
// contributes its services at each place, as if its text were pasted there;
// an entry is never reported as overriding itself.
//
// Every problem is reported at once, up to 50, as an *ErrorList of Error
// values naming the repo-relative file, the 1-based line and character column
// and the JSON pointer of the offending value. A file with a syntax error is
// not used further; type and value errors do not stop the scan. Includes must
// stay inside the repository: absolute paths, ".." escaping the root and
// symbolic links pointing outside are refused (links are detected through
// fs.ReadLinkFS, which os.DirFS implements).
//
// The decoder is a single pass over the bytes that builds the typed structs
// directly and keeps byte offsets, converting them to line:column only where
// needed; see BenchmarkResolve against BenchmarkUnmarshal.
//
// Edit opens one file for format-preserving changes (prbot's bumps and
// promotions): it splices only the bytes of the values that change and learns
// indentation, separators and line endings from the file itself.
package manifest
