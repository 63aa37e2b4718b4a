package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// hostileCase is one input of the hostile corpus: a repository an attacker
// with push rights could write, the exact problem Resolve must report, and
// the time and memory it may take to say so.
type hostileCase struct {
	name string
	// file is a root manifest under testdata/hostile; build makes the
	// repository instead (big inputs are generated, not committed).
	file  string
	build func(t *testing.T) fs.FS
	opts  []Option
	// expired resolves with a context whose deadline has passed.
	expired bool
	// want is the exact first problem of the *ErrorList, or the exact plain
	// error when plain is set; "" when the environment must resolve.
	want  string
	plain bool
	// problems is how many problems are reported in all (ErrorList.Len); 0
	// means one.
	problems int
	// services is how many services must resolve when want is "".
	services int
	// maxTime and maxAlloc bound the wall time and the bytes allocated by
	// Resolve (generous: the corpus runs on busy machines; a quadratic or
	// amplified path would take minutes and gigabytes).
	maxTime  time.Duration
	maxAlloc int64
}

const (
	small    = 1 << 20 // allocation budget of a small file's resolution
	fast     = time.Second
	giantMem = 160 << 20
)

// TestHostileManifests runs the manifest half of the hostile corpus (the
// webhook half is in internal/webhook).
func TestHostileManifests(t *testing.T) {
	cases := append(staticHostile(), generatedHostile()...)
	cases = append(cases, fileKindHostile()...)
	if len(cases) < 45 {
		t.Fatalf("only %d hostile manifest cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fsys fs.FS
			if tc.file != "" {
				data, err := os.ReadFile(filepath.Join("testdata", "hostile", tc.file))
				if err != nil {
					t.Fatal(err)
				}
				fsys = fstest.MapFS{"environments/e/manifest.json": {Data: data}}
			} else {
				fsys = tc.build(t)
			}
			ctx := t.Context()
			if tc.expired {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
				defer cancel()
			}
			env, err, took, alloc := resolveMeasured(ctx, t, fsys, tc.maxTime, tc.opts)
			if took > tc.maxTime {
				t.Errorf("took %v, over the budget of %v", took, tc.maxTime)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, over the budget of %d", alloc, tc.maxAlloc)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want the environment to resolve", err)
				}
				if len(env.Services) != tc.services {
					t.Errorf("resolved %d services, want %d", len(env.Services), tc.services)
				}
				return
			}
			if err == nil {
				t.Fatalf("resolved; want %s", tc.want)
			}
			var l *ErrorList
			switch {
			case tc.plain:
				if errors.As(err, &l) {
					t.Fatalf("got problems in files %v, want the plain error %s", err, tc.want)
				}
				if err.Error() != tc.want {
					t.Errorf("error:\n got %s\nwant %s", err, tc.want)
				}
			case !errors.As(err, &l):
				t.Fatalf("got the plain error %v, want problems starting with %s", err, tc.want)
			default:
				if got := l.Errors[0].Error(); got != tc.want {
					t.Errorf("first problem:\n got %s\nwant %s", got, tc.want)
				}
				if want := max(tc.problems, 1); l.Len() != want {
					t.Errorf("%d problems, want %d:\n%v", l.Len(), want, l)
				}
			}
		})
	}
}

// resolveMeasured resolves environment e, failing the test if it does not
// return within limit plus a grace period (a hang, not a slow run), and
// returns the time taken and the bytes allocated meanwhile.
func resolveMeasured(ctx context.Context, t *testing.T, fsys fs.FS, limit time.Duration, opts []Option) (*Environment, error, time.Duration, int64) {
	t.Helper()
	type result struct {
		env *Environment
		err error
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	start := time.Now()
	done := make(chan result, 1)
	go func() {
		env, err := Resolve(ctx, Repo{FS: fsys, Root: "."}, "e", opts...)
		done <- result{env, err}
	}()
	select {
	case r := <-done:
		took := time.Since(start)
		metrics.Read(sample)
		return r.env, r.err, took, int64(sample[0].Value.Uint64() - before)
	case <-time.After(limit + 20*time.Second):
		t.Fatalf("Resolve did not return within %v: it hangs", limit+20*time.Second)
		return nil, nil, 0, 0
	}
}

// staticHostile are the committed single-file cases.
func staticHostile() []hostileCase {
	const m = "environments/e/manifest.json"
	c := func(file, want string) hostileCase {
		return hostileCase{name: strings.TrimSuffix(file, ".json"), file: file, want: want, maxTime: fast, maxAlloc: small}
	}
	cn := func(file string, problems int, want string) hostileCase {
		tc := c(file, want)
		tc.problems = problems
		return tc
	}
	return []hostileCase{
		c("bom.json", m+`:1:1: syntax error: byte order mark at the start of the file; save it as UTF-8 without BOM`),
		cn("utf16.json", 2, m+`:1:1: the manifest must be a JSON object, got byte 0xff, which is not UTF-8`),
		c("nul-in-string.json", m+`:1:26: /services/0/name: syntax error: control character U+0000 in string; escape it`),
		c("nul-outside.json", m+`:1:17: syntax error: found '\x00' after the end of the manifest object; a manifest holds one JSON object`),
		c("invalid-utf8-string.json", m+`:1:28: /services/0/name: syntax error: invalid UTF-8 in string`),
		c("invalid-utf8-key.json", m+`:1:9: syntax error: invalid UTF-8 in string`),
		c("overlong-utf8.json", m+`:1:25: /services/0/name: syntax error: invalid UTF-8 in string`),
		c("empty.json", m+`:1:1: syntax error: empty file, expected a JSON object`),
		c("whitespace-only.json", m+`:3:1: syntax error: empty file, expected a JSON object`),
		c("top-level-array.json", m+`:1:1: the manifest must be a JSON object, got an array`),
		c("top-level-null.json", m+`:1:1: the manifest must be a JSON object, got null`),
		c("truncated.json", m+`:1:60: /services/0/containers/0/dockerTag: syntax error: unterminated string`),
		c("two-objects.json", m+`:2:1: syntax error: found an object after the end of the manifest object; a manifest holds one JSON object`),
		c("comment.json", m+`:2:3: syntax error: expected a string key, found '/' (comments are not allowed in JSON)`),
		c("single-quotes.json", m+`:1:2: syntax error: expected a string key, found '\'' (JSON strings take double quotes)`),
		c("trailing-comma.json", m+`:1:71: /services: syntax error: trailing comma before ']'`),
		c("duplicate-key.json", m+`:1:34: /services: duplicate key "services" in the same object; give each key once`),
		c("duplicate-service.json", m+`:3:12: /services/1/name: service "api" is defined twice in this file (first at line 2, column 12); a file may define a service once`),
		c("duplicate-container.json", m+`:1:70: /services/0/containers/1: service "api" has two containers with dockerName "api" (containers 0 and 1); each container needs its own dockerName`),
		c("huge-number.json", m+`:1:22: /skipConfirmation: wrong type: expected a boolean (true or false), got number 1e999999999`),
		c("number-as-service.json", m+`:1:15: /services/0: wrong type: expected a service object, got number 123456789012345678901234567890e9`),
		c("services-null.json", m+`:1:14: /services: wrong type: expected an array of service objects, got null`),
		c("include-number.json", m+`:1:15: /includes/0: wrong type: expected a relative file path string, got number 42`),
		c("bad-name-upper.json", m+`:1:24: /services/0/name: invalid service name "Api Server"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit`),
		c("bad-name-traversal.json", m+`:1:24: /services/0/name: invalid service name "../../etc"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit`),
		c("bad-tag.json", m+`:1:60: /services/0/containers/0/dockerTag: invalid dockerTag "-latest"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'`),
		c("bad-tag-space.json", m+`:1:60: /services/0/containers/0/dockerTag: invalid dockerTag "1.0 ; rm -rf /"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'`),
		c("bad-digest.json", m+`:1:85: /services/0/containers/0/dockerDigest: invalid dockerDigest "sha256:xyz"; expected "sha256:" followed by 64 lowercase hexadecimal digits`),
		c("bad-digest-algorithm.json", m+`:1:85: /services/0/containers/0/dockerDigest: invalid dockerDigest "md5:d41d8cd98f00b204e9800998ecf8427e"; expected "sha256:" followed by 64 lowercase hexadecimal digits`),
		c("bad-docker-name.json", m+`:1:61: /services/0/containers/0/dockerName: invalid dockerName "UPPER/Case"; expected a docker repository name: lowercase path components of letters and digits separated by '/', each joined by '.', '_', '__' or '-', optionally after a registry host`),
		c("bad-version.json", m+`:1:42: /services/0/version: invalid version "01.2.3" (MAJOR, MINOR and PATCH must be numbers without leading zeros); expected SemVer 2.0 such as "1.4.2" or "2.0.0-rc.1+build.5"`),
		c("surrogate-half.json", m+`:1:24: /services/0/name: invalid service name "�"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit`),
		c("bad-escape.json", m+`:1:26: /services/0/name: syntax error: invalid escape '\x' in string`),
		c("include-absolute.json", m+`:1:15: /includes/0: include "/etc/passwd" is an absolute path; includes must be relative to the including file`),
		c("include-dotdot.json", m+`:1:15: /includes/0: include "../../../../etc/passwd" leaves the repository (resolves to "../../etc/passwd"); includes must stay inside it`),
		c("include-backslash.json", m+`:1:15: /includes/0: include "..\\..\\secret.json" contains a backslash; use '/' to separate directories`),
		c("include-windows-drive.json", m+`:1:15: /includes/0: include "C:/secret.json" is an absolute path; includes must be relative to the including file`),
		c("include-empty.json", m+`:1:15: /includes/0: empty include path; expected a path relative to this file such as "./other.json"`),
		c("include-self.json", m+`:1:15: /includes/0: include cycle: environments/e/manifest.json → environments/e/manifest.json`),
		c("include-missing.json", m+`:1:15: /includes/0: include "./nope.json": environments/e/nope.json: file does not exist`),
		c("include-directory.json", m+`:1:15: /includes/0: include "../e": environments/e: is a directory, not a manifest file`),
	}
}

// generatedHostile are the big cases, generated at test time.
func generatedHostile() []hostileCase {
	const m = "environments/e/manifest.json"
	mapFS := func(files map[string][]byte) func(*testing.T) fs.FS {
		return func(*testing.T) fs.FS {
			fsys := fstest.MapFS{}
			for k, v := range files {
				fsys["environments/e/"+k] = &fstest.MapFile{Data: v}
			}
			return fsys
		}
	}
	return []hostileCase{
		{name: "amplification: 215k services included 9,999 times", build: func(*testing.T) fs.FS { return amplification(215000, 9999) },
			want:    "environments/e/b.json:100001:1: /services/100000: this file defines more than 100000 service entries, the limit per environment; include chain: environments/e/manifest.json → environments/e/b.json",
			maxTime: 5 * time.Second, maxAlloc: giantMem},
		{name: "amplification: 50k services included 9,999 times", build: func(*testing.T) fs.FS { return amplification(50000, 9999) },
			want:    m + ":1:36: /includes/2: include \"./b.json\" brings the environment to 150000 service entries, over the limit of 100000 (a file's services count once per place that includes it); include chain: environments/e/manifest.json → environments/e/b.json",
			maxTime: 5 * time.Second, maxAlloc: giantMem},
		{name: "one-line 4 MB manifest resolves", build: func(*testing.T) fs.FS { return fstest.MapFS{m: {Data: oneLine(4 << 20)}} },
			services: 65637, maxTime: 5 * time.Second, maxAlloc: giantMem},
		{name: "one-line giant over the file size limit", build: func(*testing.T) fs.FS { return fstest.MapFS{m: {Data: oneLine(4<<20 + 4096)}} },
			want: m + `: reading the environment's manifest: file is 4198307 bytes, over the limit of 4194304 bytes`, maxTime: fast, maxAlloc: giantMem},
		{name: "arrays nested 100,000 deep", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"x": ` + strings.Repeat("[", 100000))}),
			opts: []Option{AllowUnknownKeys()},
			want: m + `:1:518: /x: syntax error: nesting deeper than 512 levels`, maxTime: fast, maxAlloc: small},
		{name: "objects nested 100,000 deep", build: mapFS(map[string][]byte{"manifest.json": []byte(strings.Repeat(`{"a":`, 100000))}),
			want: m + `:1:2: /a: unknown key "a"; accepted keys: includes, services, skipConfirmation`, problems: 2, maxTime: fast, maxAlloc: small},
		{name: "chain of 10,000 includes", build: chain(10000),
			want: `environments/e/32.json:1:15: /includes/0: include "./33.json" nests deeper than the limit of 32 levels`, maxTime: fast, maxAlloc: 16 << 20},
		{name: "10,000 files included by the root", build: wide(10000),
			want: m + `:10000:1: /includes/9999: include "./9999.json" goes over the limit of 10000 distinct files per environment; include chain: environments/e/manifest.json → environments/e/9999.json`, maxTime: 5 * time.Second, maxAlloc: 64 << 20},
		{name: "exponential diamond", build: diamond(30),
			want: `environments/e/d28.json:1:15: /includes/0: include "./d29.json" goes over the limit of 100000 includes per environment (a file counts once per place that includes it); include chain: ` + diamondChain(29), maxTime: 5 * time.Second, maxAlloc: 128 << 20},
		{name: "9 files of 4 MB cross the byte budget", build: padded(9, 4<<20-64),
			want: m + `:1:111: /includes/8: include "./8.json" brings the environment to 37748282 bytes read, over the limit of 33554432 bytes; include chain: environments/e/manifest.json → environments/e/8.json`, maxTime: 5 * time.Second, maxAlloc: giantMem},
		{name: "50,000 containers with one name in one service", build: mapFS(map[string][]byte{"manifest.json": sameContainers(50000)}),
			want: m + `:1:65: /services/0/containers/1: service "api" has two containers with dockerName "api" (containers 0 and 1); each container needs its own dockerName`, problems: 49999, maxTime: 5 * time.Second, maxAlloc: 64 << 20},
		{name: "one-line 20,000 services each with an unknown key allowed", build: mapFS(map[string][]byte{"manifest.json": unknownKeys(20000)}),
			opts: []Option{AllowUnknownKeys()}, services: 20000, maxTime: 5 * time.Second, maxAlloc: 64 << 20},
		{name: "a 1 MB unknown key", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"` + strings.Repeat("k", 1<<20) + `": 1}`)}),
			want: m + `:1:2: /` + strings.Repeat("k", 60) + `…: unknown key "` + strings.Repeat("k", 59) + `…; accepted keys: includes, services, skipConfirmation`, maxTime: fast, maxAlloc: 16 << 20},
		{name: "a 1 MB include path", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"includes": ["./` + strings.Repeat("a/", 1<<19) + `x.json"]}`)}),
			want: m + `:1:15: /includes/0: include "./a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a…: environments/e/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a…: file does not exist`, maxTime: fast, maxAlloc: 16 << 20},
		{name: "a 1 MB service name of escapes", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"services": [{"name": "` + strings.Repeat(`\u0041`, 1<<17) + `", "containers": [{"dockerTag": "1"}]}]}`)}),
			want: m + `:1:24: /services/0/name: service name "` + strings.Repeat("A", 59) + `… is 131072 characters long; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit`, maxTime: fast, maxAlloc: 16 << 20},
		{name: "MaxServices(2): the third entry of a file", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"services": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}`)}),
			opts: []Option{MaxServices(2)},
			want: m + `:1:45: /services/2: this file defines more than 2 service entries, the limit per environment; include chain: environments/e/manifest.json`, maxTime: fast, maxAlloc: small},
		{name: "MaxIncludes(2): the third include site", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"includes": ["./a.json", "./a.json"]}`), "a.json": []byte(`{}`)}),
			opts: []Option{MaxIncludes(2)},
			want: m + `:1:27: /includes/1: include "./a.json" goes over the limit of 2 includes per environment (a file counts once per place that includes it); include chain: environments/e/manifest.json → environments/e/a.json`, maxTime: fast, maxAlloc: small},
		{name: "MaxBytes(40): the second file", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"includes": ["./a.json"]}`), "a.json": []byte(`{"services": []}`)}),
			opts: []Option{MaxBytes(40)},
			want: m + `:1:15: /includes/0: include "./a.json" brings the environment to 42 bytes read, over the limit of 40 bytes; include chain: environments/e/manifest.json → environments/e/a.json`, maxTime: fast, maxAlloc: small},
		{name: "include cycle", build: mapFS(map[string][]byte{"manifest.json": []byte(`{"includes": ["./a.json"]}`), "a.json": []byte(`{"includes": ["./b.json"]}`), "b.json": []byte(`{"includes": ["./a.json"]}`)}),
			want: `environments/e/b.json:1:15: /includes/0: include cycle: environments/e/a.json → environments/e/b.json → environments/e/a.json`, maxTime: fast, maxAlloc: small},
		{name: "context deadline", build: func(*testing.T) fs.FS { return amplification(1000, 10) },
			expired: true, want: `resolving environment "e": stopped after reading 0 files: context deadline exceeded`, plain: true, maxTime: fast, maxAlloc: small},
	}
}

// diamondChain is the include chain down to d<last>.json.
func diamondChain(last int) string {
	chain := []string{"environments/e/manifest.json"}
	for i := 0; i <= last; i++ {
		chain = append(chain, fmt.Sprintf("environments/e/d%d.json", i))
	}
	return strings.Join(chain, " → ")
}

// chain is e/manifest.json → 1.json → 2.json → … → n.json.
func chain(n int) func(*testing.T) fs.FS {
	return func(*testing.T) fs.FS {
		fsys := fstest.MapFS{"environments/e/manifest.json": {Data: []byte(`{"includes": ["./1.json"]}`)}}
		for i := 1; i <= n; i++ {
			fsys[fmt.Sprintf("environments/e/%d.json", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, `{"includes": ["./%d.json"]}`, i+1)}
		}
		return fsys
	}
}

// wide is a root manifest including n distinct files of one service each.
func wide(n int) func(*testing.T) fs.FS {
	return func(*testing.T) fs.FS {
		fsys := fstest.MapFS{}
		var inc []string
		for i := range n {
			inc = append(inc, fmt.Sprintf(`"./%d.json"`, i))
			fsys[fmt.Sprintf("environments/e/%d.json", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, `{"services": [{"name": "s%d", "containers": [{"dockerTag": "1"}]}]}`, i)}
		}
		fsys["environments/e/manifest.json"] = &fstest.MapFile{Data: []byte(`{"includes": [` + strings.Join(inc, ",\n") + `]}`)}
		return fsys
	}
}

// diamond is d0 including d1 twice, d1 including d2 twice, …: 2^depth
// include sites from depth small files.
func diamond(depth int) func(*testing.T) fs.FS {
	return func(*testing.T) fs.FS {
		fsys := fstest.MapFS{"environments/e/manifest.json": {Data: []byte(`{"includes": ["./d0.json", "./d0.json"]}`)}}
		for i := range depth {
			fsys[fmt.Sprintf("environments/e/d%d.json", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, `{"includes": ["./d%d.json", "./d%d.json"]}`, i+1, i+1)}
		}
		fsys[fmt.Sprintf("environments/e/d%d.json", depth)] = &fstest.MapFile{Data: []byte(`{}`)}
		return fsys
	}
}

// padded is a root manifest including n files of size bytes each (an empty
// manifest padded with spaces).
func padded(n, size int) func(*testing.T) fs.FS {
	return func(*testing.T) fs.FS {
		data := append([]byte(`{}`), strings.Repeat(" ", size-2)...)
		fsys := fstest.MapFS{}
		var inc []string
		for i := range n {
			inc = append(inc, fmt.Sprintf(`"./%d.json"`, i))
			fsys[fmt.Sprintf("environments/e/%d.json", i)] = &fstest.MapFile{Data: data}
		}
		fsys["environments/e/manifest.json"] = &fstest.MapFile{Data: []byte(`{"includes": [` + strings.Join(inc, ", ") + `]}`)}
		return fsys
	}
}

// sameContainers is one service of n containers all named "api".
func sameContainers(n int) []byte {
	b := []byte(`{"services": [{"name": "api", "containers": [`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"dockerTag": "1"}`...)
	}
	return append(b, `]}]}`...)
}

// unknownKeys is a one-line manifest of n services with an unknown key each.
func unknownKeys(n int) []byte {
	b := []byte(`{"services": [`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name": "s%d", "colour": "blue", "containers": [{"dockerTag": "1"}]}`, i)
	}
	return append(b, `]}`...)
}

// fileKindHostile are the cases about what a path may be: FIFOs, sockets,
// devices and symbolic links, made at test time on a real directory (or
// with fstest modes where a real one needs privileges).
func fileKindHostile() []hostileCase {
	const m = "environments/e/manifest.json"
	dir := func(t *testing.T, files map[string]string, special func(env string)) fs.FS {
		d := t.TempDir()
		env := filepath.Join(d, "environments", "e")
		if err := os.MkdirAll(env, 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range files {
			write(t, filepath.Join(env, k), v)
		}
		special(env)
		return os.DirFS(d)
	}
	mkfifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("cannot make a FIFO here: %v", err)
		}
	}
	return []hostileCase{
		{name: "include of a FIFO", build: func(t *testing.T) fs.FS {
			return dir(t, map[string]string{"manifest.json": `{"includes": ["./pipe.json"]}`}, func(env string) { mkfifo(t, filepath.Join(env, "pipe.json")) })
		}, want: m + `:1:15: /includes/0: include "./pipe.json": environments/e/pipe.json: is a named pipe (FIFO), not a regular file; only regular files may be included`, maxTime: fast, maxAlloc: small},
		{name: "the root manifest is a FIFO", build: func(t *testing.T) fs.FS {
			return dir(t, nil, func(env string) { mkfifo(t, filepath.Join(env, "manifest.json")) })
		}, want: m + `: reading the environment's manifest: is a named pipe (FIFO), not a regular file; only regular files may be included`, maxTime: fast, maxAlloc: small},
		{name: "include of a socket", build: func(t *testing.T) fs.FS {
			return dir(t, map[string]string{"manifest.json": `{"includes": ["./s.json"]}`}, func(env string) {
				l, err := net.Listen("unix", filepath.Join(env, "s.json"))
				if err != nil {
					t.Skipf("cannot make a socket here: %v", err)
				}
				t.Cleanup(func() { l.Close() })
			})
		}, want: m + `:1:15: /includes/0: include "./s.json": environments/e/s.json: is a socket, not a regular file; only regular files may be included`, maxTime: fast, maxAlloc: small},
		{name: "include of a character device", build: func(*testing.T) fs.FS {
			return fstest.MapFS{m: {Data: []byte(`{"includes": ["./tty.json"]}`)}, "environments/e/tty.json": {Mode: fs.ModeDevice | fs.ModeCharDevice}}
		}, want: m + `:1:15: /includes/0: include "./tty.json": environments/e/tty.json: is a character device, not a regular file; only regular files may be included`, maxTime: fast, maxAlloc: small},
		{name: "include of a symlink to /dev/zero", build: func(t *testing.T) fs.FS {
			return dir(t, map[string]string{"manifest.json": `{"includes": ["./zero.json"]}`}, func(env string) { symlink(t, "/dev/zero", filepath.Join(env, "zero.json")) })
		}, want: m + `:1:15: /includes/0: include "./zero.json": environments/e/zero.json -> /dev/zero: symbolic link points outside the repository`, maxTime: fast, maxAlloc: small},
		{name: "include of a symlink out of the repository", build: func(t *testing.T) fs.FS {
			return dir(t, map[string]string{"manifest.json": `{"includes": ["./out.json"]}`}, func(env string) { symlink(t, "../../../etc/passwd", filepath.Join(env, "out.json")) })
		}, want: m + `:1:15: /includes/0: include "./out.json": environments/e/out.json -> ../../../etc/passwd: symbolic link points outside the repository`, maxTime: fast, maxAlloc: small},
		{name: "the root manifest is a symlink out of the repository", build: func(t *testing.T) fs.FS {
			return dir(t, nil, func(env string) { symlink(t, "/etc/passwd", filepath.Join(env, "manifest.json")) })
		}, want: m + `: environments/e/manifest.json -> /etc/passwd: symbolic link points outside the repository`, maxTime: fast, maxAlloc: small},
		{name: "a symlink loop", build: func(t *testing.T) fs.FS {
			return dir(t, map[string]string{"manifest.json": `{"includes": ["./a.json"]}`}, func(env string) {
				symlink(t, "b.json", filepath.Join(env, "a.json"))
				symlink(t, "a.json", filepath.Join(env, "b.json"))
			})
		}, want: m + `:1:15: /includes/0: include "./a.json": environments/e/a.json: too many levels of symbolic links`, maxTime: fast, maxAlloc: small},
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
