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
// Resolution is bounded by work, not by luck: it reads at most
// DefaultMaxFiles distinct files and DefaultMaxBytes bytes, visits at most
// DefaultMaxIncludes include sites and DefaultMaxServices service entries
// (a file included from n places counts n times, though it is read and
// decoded once), nests at most DefaultMaxDepth includes deep, and stops at
// the first limit crossed with an error naming the include and the include
// chain (options raise or lower each limit). Resolve also stops when its
// context ends. Only regular files are read: a FIFO, device or socket is
// refused from its mode before it is opened.
//
// The decoder is a single pass over the bytes that builds the typed structs
// directly and keeps byte offsets, converting them to line:column only where
// needed (from marks every 256 bytes, so the cost does not depend on the
// layout: see BenchmarkDecodeOneLine against BenchmarkUnmarshalOneLine, and
// BenchmarkResolve against BenchmarkUnmarshal).
//
// Edit opens one file for format-preserving changes (prbot's bumps and
// promotions): it splices only the bytes of the values that change and learns
// indentation, separators and line endings from the file itself.
package manifest
