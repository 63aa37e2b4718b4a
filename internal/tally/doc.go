// Package tally counts the approvals of an environment's pending plans
// under its policy: approvals.required distinct approvers, forbidAuthors
// (four-eyes: nobody who wrote or committed a commit to deploy), automation
// allowed or not, and the approval rules of internal/policy (the
// requirement each plan's rules ask, the teams and permission they name).
// Approvals are kept in the pending record of the environment's state, so
// every replica counts into the same record and a restart forgets none; a
// new planHash starts from none. The daemon's worker asks its Counter at
// each approval and each plan it proposes.
package tally
