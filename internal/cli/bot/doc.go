// Package bot builds the subcommands of the prbot binary: bump (through the
// bot's own credentials, or --via prbot serve's keyless bump API), promote
// and serve (the webhooks and the keyless bump API behind one server with
// the limits of every Stagehand door), and bump --wait (for the merge, then
// the deploy through the reconciler's API). internal/cli composes them into
// the prbot binary's tree (cli.NewPrbot); what both binaries' commands share
// is internal/cli/command's.
package bot
