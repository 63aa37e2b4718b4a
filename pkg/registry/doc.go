// Package registry resolves image tags to digests through
// go-containerregistry, as pkg/reconcile's digest verification and pinning
// need: a Resolver of one Config (credentials, plain-HTTP hosts, transport,
// concurrency, a timeout per image) keeps what its plans share — a token
// bucket per registry host (token exchanges included), a digest cache per
// repository:tag and credentials, the credentials a keychain answered and
// the keychains read per pull context — and a Session resolves one plan's
// Keys, building each pull context's keychain once. With Keychains (see
// ClusterKeychains) each workload's images are resolved with what its
// cluster would pull with: its pod's imagePullSecrets and those of its
// ServiceAccount. A tag the registry does not serve is ErrTagNotFound; a
// registry that refuses the credentials (401, 403) says whose they were,
// and the keychain is read again for the next plan.
package registry
