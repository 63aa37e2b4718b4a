package promote

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"time"

	"github.com/robfig/cron/v3"
)

// FileName is the pipeline file's name. It sits beside the environments/
// directory; a repository may keep it inside environments/ instead.
const FileName = "pipeline.yaml"

// Pipeline is the parsed pipeline.yaml: stages in promotion order.
//
//	stages:
//	  - name: devel                 # an environment under environments/
//	    lockPath: apps/devel        # lock path prefix checked before opening or merging into this stage
//	  - name: staging
//	    promoteFrom: devel          # an earlier stage
//	    autoMerge: true             # merge the promotion PR once its checks are green and no lock blocks
//	    lockPath: apps/staging
//	    requires:
//	      healthy: true             # default true: stagehand/devel succeeded on a commit with these versions
//	      soak: 30m                 # minimum time since that success
//	    sequence: [approval, deployment, {name: test, properties: {...}}, release]   # optional
//	    triggeredOn: devel.delivery.finished   # optional: the same as promoteFrom: devel, requires.healthy: true
//	    window:                     # optional: promote only while a window is open
//	      schedule: "CRON_TZ=Europe/London 0 9 * * 1-5"
//	      duration: 8h              # open for this long after each firing of schedule
//	owners:                         # optional: which upstream repositories may bump which file (keyless bumps)
//	  checkout-api.json: [acme/checkout-api]
//	  shared.json:
//	    repositories: [acme/a, acme/b]
//	    allowNewServices: true      # the repositories may add services the file does not define yet
//
// A stage that upstream CI may bump through prbot serve's keyless bump API
// says so, optionally restricting the CI runs allowed to:
//
//	stages:
//	  - name: devel
//	    acceptsBumps: true
//	    bumpClaims:
//	      ref: [refs/heads/main]                  # the git ref the run built (exact)
//	      workflowRef: [acme/checkout-api/.github/workflows/release.yml@]   # prefixes of the workflow (GitLab: CI config) ref
//	      event: [push]                           # the event that started the run
type Pipeline struct {
	// File is the repo-relative path the pipeline came from (for messages).
	File   string
	Stages []Stage
	// Owners maps a manifest file's base name to the upstream repositories
	// allowed to bump it; a file not listed is owned by the repository of
	// its name (manifest.Owner).
	Owners map[string]FileOwners
}

// FileOwners are the repositories that may bump one file.
type FileOwners struct {
	// Repositories are full repository paths: OWNER/NAME on GitHub,
	// group[/subgroup]/project on GitLab.
	Repositories []string
	// AllowNewServices lets them add services and containers the file does
	// not define yet; otherwise only existing ones can be bumped.
	AllowNewServices bool
}

// BumpClaims restrict which CI runs may bump a stage. An empty list allows
// any value; several values in one list are alternatives.
type BumpClaims struct {
	// Ref lists the git refs allowed (refs/heads/main, refs/tags/v1.2.3).
	Ref []string
	// WorkflowRef lists prefixes of the workflow reference (GitHub
	// workflow_ref, GitLab ci_config_ref_uri).
	WorkflowRef []string
	// Event lists the events allowed (GitHub event_name, GitLab pipeline_source).
	Event []string
}

// Stage is one step of the pipeline.
type Stage struct {
	Name string
	// PromoteFrom names the earlier stage whose versions are promoted into this one;
	// empty for a stage fed by bumps only.
	PromoteFrom string
	AutoMerge   bool
	LockPath    string
	Requires    Requires
	Window      *Window
	// AcceptsBumps lets upstream CI bump this stage's files through the
	// keyless bump API; BumpClaims restricts which runs may.
	AcceptsBumps bool
	BumpClaims   BumpClaims
	// Sequence is the stage's delivery sequence as declared (nil: the
	// default, see SequenceTasks).
	Sequence []Task
	// TriggeredOn is the earlier stage's finished sequence that lets
	// versions move into this one (nil when not declared; PromoteFrom is
	// then the trigger's stage).
	TriggeredOn *Trigger
	// Line is where the stage starts in the file.
	Line int
}

// Requires are the gates a promotion into a stage must pass.
type Requires struct {
	// Healthy requires the earlier stage's sequence to have finished with
	// pass (its stagehand/<from> check run succeeded: the daemon completes
	// it once the whole sequence has run) on a commit whose earlier stage
	// runs the promoted versions.
	Healthy bool
	// Soak is the minimum time since that pass.
	Soak time.Duration
}

// Window limits promotions to the time after each firing of a cron schedule.
// A window is open at t when the schedule fired in (t-Duration, t].
type Window struct {
	Schedule string
	Duration time.Duration
	sched    cron.Schedule
}

// Pair is one promotion: from an earlier stage into a later one.
type Pair struct{ From, To string }

func (p Pair) String() string { return p.From + " → " + p.To }

// Branch is the head branch of the pair's promotion pull request.
func (p Pair) Branch() string { return "stagehand/promote-" + p.From + "-" + p.To }

var (
	stageNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	lockPathRE  = regexp.MustCompile(`^[-a-z0-9/]+$`)
	cronParser  = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// Load reads root/pipeline.yaml, or else root/environments/pipeline.yaml,
// from fsys. A missing file is reported with an error that matches
// fs.ErrNotExist.
func Load(fsys fs.FS, root string) (*Pipeline, error) {
	name := path.Join(root, FileName)
	data, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		inside := path.Join(root, "environments", FileName)
		if d, err2 := fs.ReadFile(fsys, inside); err2 == nil {
			return Parse(inside, d)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading pipeline %s: %w", name, err)
	}
	return Parse(name, data)
}

// Parse parses and validates a pipeline file. file names it in errors. All
// problems are reported at once as an ErrorList, each with line and column.
func Parse(file string, data []byte) (*Pipeline, error) {
	if len(data) > MaxFileSize {
		return nil, ErrorList{{File: file, Message: fmt.Sprintf("the file is %d bytes long; at most %d are accepted", len(data), MaxFileSize)}}
	}
	p := &parser{file: file}
	pl := p.parse(data)
	if p.omitted > 0 {
		p.errs = append(p.errs, omittedError(file, p.omitted))
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return pl, nil
}

// Stage returns the named stage.
func (p *Pipeline) Stage(name string) (*Stage, bool) {
	for i := range p.Stages {
		if p.Stages[i].Name == name {
			return &p.Stages[i], true
		}
	}
	return nil, false
}

// Pairs lists every promotion of the pipeline, in stage order.
func (p *Pipeline) Pairs() []Pair {
	var out []Pair
	for _, s := range p.Stages {
		if s.PromoteFrom != "" {
			out = append(out, Pair{From: s.PromoteFrom, To: s.Name})
		}
	}
	return out
}

// Pair returns the promotion from → to if the pipeline defines it.
func (p *Pipeline) Pair(from, to string) (Pair, error) {
	s, ok := p.Stage(to)
	if !ok {
		return Pair{}, fmt.Errorf("finding stage %q in %s: %w", to, p.File, ErrNoStage)
	}
	if s.PromoteFrom != from {
		if s.PromoteFrom == "" {
			return Pair{}, fmt.Errorf("promoting %s → %s: stage %q has no promoteFrom in %s: %w", from, to, to, p.File, ErrNoPair)
		}
		return Pair{}, fmt.Errorf("promoting %s → %s: stage %q promotes from %q in %s: %w", from, to, to, s.PromoteFrom, p.File, ErrNoPair)
	}
	return Pair{From: from, To: to}, nil
}

// OwnersOf returns the repositories allowed to bump file (a base name such as
// "checkout-api.json") and whether pipeline.yaml lists the file; when it
// does not, the ownership convention applies (manifest.Owner).
func (p *Pipeline) OwnersOf(file string) (FileOwners, bool) {
	o, ok := p.Owners[file]
	return o, ok
}

// ErrNoStage and ErrNoPair report a stage or promotion the pipeline does not define.
var (
	ErrNoStage = errors.New("no such stage")
	ErrNoPair  = errors.New("no such promotion")
)

// Open reports whether the window is open at t.
func (w *Window) Open(t time.Time) bool {
	if w == nil {
		return true
	}
	fire := w.sched.Next(t.Add(-w.Duration))
	return !fire.IsZero() && !fire.After(t) // zero: the schedule never fires (e.g. 30 February)
}

// Opens returns the next time the window opens strictly after t.
func (w *Window) Opens(t time.Time) time.Time { return w.sched.Next(t) }

// Closes returns when the window open at t closes (zero if it is closed at t).
func (w *Window) Closes(t time.Time) time.Time {
	if w == nil || !w.Open(t) {
		return time.Time{}
	}
	// The latest firing in (t-d, t]; later firings extend the window.
	end := time.Time{}
	for f := w.sched.Next(t.Add(-w.Duration)); !f.IsZero() && !f.After(t); f = w.sched.Next(f) {
		end = f.Add(w.Duration)
	}
	// Firings before end keep it open (bounded: a window longer than the
	// schedule's period never closes).
	for i, f := 0, w.sched.Next(t); i < 10000 && !f.IsZero() && f.Before(end); i, f = i+1, w.sched.Next(f) {
		end = f.Add(w.Duration)
	}
	return end
}

// Cron is the parsed schedule of the window.
func (w *Window) Cron() cron.Schedule { return w.sched }
