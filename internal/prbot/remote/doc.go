// Package remote is the manifests repository of internal/prbot as the bot
// reaches it through GitHub's REST API, nothing cloned: its branches and
// files (Repository, with its snapshot at one commit as a file system, FS,
// and the writes that make a branch hold given files, Branches), its pull
// requests and the bot's comments on them (Pulls), and its check runs and
// commit statuses (Checks). What the bot decides with them (bumps,
// promotions, rollbacks, the lock rules, merging) is internal/prbot's.
package remote
