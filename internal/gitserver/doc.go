// Package gitserver is a real git server for tests: the git CLI's own
// `git http-backend` behind net/http/cgi on an httptest loopback listener
// (smart HTTP, fetch and push), plus an optional SSH front end that runs
// git-upload-pack for each session.
//
// Typical use:
//
//	srv := gitserver.New(t, gitserver.WithBasicAuth("u", "p")) // or WithBearer("tok"), WithCredentialCheck(f), or none
//	url := srv.Init(t, "manifests")                             // bare repo, returns its clone URL
//	repo := srv.Repo("manifests")                               // writes commits into it, as pushes would
//	sha := repo.Commit(t, "main", map[string]string{
//		"environments/devel/manifest.json": `{"services": []}`,
//		"old.json":                          gitserver.Deleted,        // remove a path
//		"link.json":                         gitserver.Symlink("a.json"), // a symlink entry
//	}, "add devel")
//	sha = repo.Push(t, gitserver.Commit{Branch: "main", Files: files, Message: "fix",
//		Author: gitserver.Person{Name: "Alice", Email: "alice@acme.example"}}) // Committer: zero means the author
//	sha = repo.CommitDir(t, gitserver.Commit{Branch: "main", Message: "copy examples"}, "../../examples/environments", "environments")
//	sha = repo.ForcePush(t, gitserver.Commit{Branch: "main", Files: files, Message: "rewritten"}) // a new root commit
//	srv.Reset(t, "manifests", "main", oldSHA)                   // force the branch to any commit
//	head := srv.Head(t, "manifests", "main")
//	srv.Requests()      // Counts{InfoRefs, UploadPack, ReceivePack, Unauthorized}
//	srv.ResetRequests()
//	srv.Stop(t); srv.Start(t) // remote down (connection refused) and back, same URL
//	srv.Path("manifests")     // the bare repository on disk (open it with go-git to write signed commits)
//	srv.Git(t, "manifests", stdin, "fast-import") // any git command inside the bare repository
//
// A request counts as InfoRefs when it is `GET .../info/refs?service=git-upload-pack`
// (what an ls-remote or the first half of a fetch sends), UploadPack when it is
// `POST .../git-upload-pack` (the fetch proper) and ReceivePack for
// `.../git-receive-pack` in either form (push). Requests refused for missing or
// wrong credentials count only as Unauthorized and get 401 with a
// WWW-Authenticate header.
//
// SSH: sshd := srv.ServeSSH(t, clientPublicKey) accepts that one public key and
// serves git-upload-pack; sshd.URL("manifests") is the clone URL and
// sshd.KnownHosts() a known_hosts line for its host key.
//
// Commits are written with git plumbing (hash-object, update-index with a
// private index file, write-tree, commit-tree, update-ref) directly in the
// bare repository, with author and committer set through the environment, so
// no global git configuration is needed. Everything is removed at test cleanup.
package gitserver
