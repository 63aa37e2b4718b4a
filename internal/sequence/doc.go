// Package sequence is the contract of a stage's delivery sequence (pipeline.yaml's
// stages[].sequence): the state of one run per environment and revision (which task is
// running or finished, with which result), the Runner an implementation of a task kind
// provides (verification tasks: test, evaluation), and the Events every step announces
// (<stage>.<sequence>.started|finished, <task>.triggered|started|finished) to a Listener
// such as internal/notify. The daemon runs the sequence; this package holds no component.
package sequence
