// Package identity names who did something, typed by the kind of credential
// that proved it: github:alice, token:ci-deployer,
// kubernetes:system:serviceaccount:ci:deployer, stagehand:reconciler.
//
// Every record Stagehand keeps about a person or a program (a lock's owner,
// an approval, a history entry, an Event, a CloudEvent) writes an ID as
// "kind:name", and every rule compares IDs, never bare names: a GitHub login
// spelled like a named token is not that token. Records written before IDs
// were typed hold a bare name; Parse reads them as a legacy ID that shows as
// it did and equals no typed ID.
//
// A Principal is an ID with the person it acts for, if any: a named token
// or a ServiceAccount may declare one (actsFor), and is then that person
// for every rule. Without one it is automation.
package identity
