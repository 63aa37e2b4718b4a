// Package command holds what the commands of both binaries share, below
// internal/cli (the reconciler's commands, and the composition of both
// trees) and internal/cli/bot (prbot's commands): how a command ends (an
// exit code, a usage error; Code, Exit, Usagef), how a root command is
// finished (Root), the secrets and API tokens read from files, the API
// server flag's check, the API's refusals printed, -o json, the one wait for
// a deploy through the reconciler's API (DeployWait), and a logger quiet
// about the stop itself (QuietOnStop).
package command
