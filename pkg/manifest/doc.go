// Package manifest parses, validates and resolves the deployment manifests of
// a Stagehand manifests repository (the services RFC, seed 000): for one
// environment it reads environments/<env>/manifest.json and its includes from
// an fs.FS and returns the effective list of services, the overrides between
// files, warnings and the include tree (layout). Every problem is reported at
// once as an *ErrorList naming the repo-relative file, the line and column and
// the JSON pointer of the offending value.
//
// The package also holds a format-preserving editor (Edit) used by prbot to
// bump tags and digests without disturbing the rest of a file.
package manifest
