// Package policy holds the approval rules an environment's plans are judged by: CEL expressions
// (environments.<env>.approvals.rules) over the plan, the revision, the API server's clock, the
// environment's recent history and its locks, compiled and type-checked when the configuration loads and
// evaluated under a cost limit for every decision. Every rule whose when is true applies and the strictest
// combination wins (Requirement); a rule that cannot be evaluated refuses, never waves an approval through.
package policy
