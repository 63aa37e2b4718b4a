package manifest

// badCase is a repository with something wrong and every problem it must
// produce. Files are relative to environments/; env is "e" unless set.
type badCase struct {
	name  string
	files map[string]string
	opts  []Option
	want  []Error
}

const okSvc = `{"name": "api", "containers": [{"dockerTag": "1.0.0"}]}`

func root(body string) map[string]string { return map[string]string{"e/manifest.json": body} }

func badCases() []badCase {
	long := "a123456789b123456789c123456789d123456789e123456789f123456789abcd"
	tag129 := "t" + long + long
	return []badCase{
		{name: "syntax: missing comma between members", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 17, Pointer: "", Message: "syntax error: expected ',' or '}', found string \"includes\""},
		}, files: root(`{"services": [] "includes": []}`)},
		{name: "syntax: trailing comma in array", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 26, Pointer: "/includes", Message: "syntax error: trailing comma before ']'"},
		}, files: root(`{"includes": ["./a.json",]}`)},
		{name: "syntax: trailing comma in object", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 17, Pointer: "", Message: "syntax error: trailing comma before '}'"},
		}, files: root(`{"services": [],}`)},
		{name: "syntax: unterminated string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "syntax error: unterminated string"},
		}, files: root(`{"services": [{"name": "api}]}`)},
		{name: "syntax: empty file", want: []Error{
			{File: "environments/e/manifest.json", Line: 3, Column: 1, Pointer: "", Message: "syntax error: empty file, expected a JSON object"},
		}, files: root("\n\n")},
		{name: "syntax: text after the object", want: []Error{
			{File: "environments/e/manifest.json", Line: 2, Column: 1, Pointer: "", Message: "syntax error: found an object after the end of the manifest object; a manifest holds one JSON object"},
		}, files: root("{}\n{}")},
		{name: "syntax: invalid literal", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 22, Pointer: "/skipConfirmation", Message: "syntax error: invalid literal, expected true"},
		}, files: root(`{"skipConfirmation": tru}`)},
		{name: "syntax: control character in string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 26, Pointer: "/services/0/name", Message: "syntax error: control character U+0009 in string; escape it"},
		}, files: root("{\"services\": [{\"name\": \"a\tb\"}]}")},
		{name: "syntax: invalid escape in a container field names the field", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 62, Pointer: "/services/0/containers/0/dockerTag", Message: "syntax error: invalid escape '\\q' in string"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "1\q"}]}]}`)},
		{name: "syntax: invalid escape", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 26, Pointer: "/services/0/name", Message: "syntax error: invalid escape '\\x' in string"},
		}, files: root(`{"services": [{"name": "a\xb"}]}`)},
		{name: "syntax: bad number", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/services/0", Message: "syntax error: invalid number"},
		}, files: root(`{"services": [1.]}`)},
		{name: "syntax: comment", want: []Error{
			{File: "environments/e/manifest.json", Line: 2, Column: 3, Pointer: "", Message: "syntax error: expected a string key, found '/' (comments are not allowed in JSON)"},
		}, files: root("{\n  // devel\n  \"services\": []\n}")},
		{name: "syntax: single quotes", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 2, Pointer: "", Message: "syntax error: expected a string key, found '\\'' (JSON strings take double quotes)"},
		}, files: root(`{'services': []}`)},
		{name: "syntax: byte order mark", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 1, Pointer: "", Message: "syntax error: byte order mark at the start of the file; save it as UTF-8 without BOM"},
		}, files: root("\ufeff{}")},
		{name: "syntax: invalid UTF-8", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 26, Pointer: "/services/0/name", Message: "syntax error: invalid UTF-8 in string"},
		}, files: root("{\"services\": [{\"name\": \"a\xffb\"}]}")},
		{name: "syntax: nesting too deep", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 2, Pointer: "/x", Message: "unknown key \"x\"; accepted keys: includes, services, skipConfirmation"},
			{File: "environments/e/manifest.json", Line: 1, Column: 518, Pointer: "/x", Message: "syntax error: nesting deeper than 512 levels"},
		}, files: root(`{"x": ` + repeat("[", 600) + repeat("]", 600) + `}`)},
		{name: "type: root is an array", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 1, Pointer: "", Message: "the manifest must be a JSON object, got an array"},
		}, files: root(`[{"name": "api"}]`)},
		{name: "type: services is an object", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 14, Pointer: "/services", Message: "wrong type: expected an array of service objects, got an object"},
		}, files: root(`{"services": {"name": "api"}}`)},
		{name: "type: service is a string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/services/0", Message: "wrong type: expected a service object, got string \"api\""},
		}, files: root(`{"services": ["api"]}`)},
		{name: "type: name is a number", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "wrong type: expected a string, got number 42"},
		}, files: root(`{"services": [{"name": 42}]}`)},
		{name: "type: containers is a string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 45, Pointer: "/services/0/containers", Message: "wrong type: expected an array of container objects, got string \"api:1\""},
		}, files: root(`{"services": [{"name": "api", "containers": "api:1"}]}`)},
		{name: "type: container is an array", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 46, Pointer: "/services/0/containers/0", Message: "wrong type: expected a container object, got an array"},
		}, files: root(`{"services": [{"name": "api", "containers": [["1.0"]]}]}`)},
		{name: "type: dockerTag is a number", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 60, Pointer: "/services/0/containers/0/dockerTag", Message: "wrong type: expected a string, got number 1.5"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": 1.5}]}]}`)},
		{name: "type: skipConfirmation is a string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 22, Pointer: "/skipConfirmation", Message: "wrong type: expected a boolean (true or false), got string \"yes\""},
		}, files: root(`{"skipConfirmation": "yes"}`)},
		{name: "type: includes is a string", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 14, Pointer: "/includes", Message: "wrong type: expected an array of relative file paths, got string \"./a.json\""},
		}, files: root(`{"includes": "./a.json"}`)},
		{name: "type: include is a number", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "wrong type: expected a relative file path string, got number 5"},
		}, files: root(`{"includes": [5]}`)},
		{name: "type: version is null", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 42, Pointer: "/services/0/version", Message: "wrong type: expected a SemVer string such as \"1.2.3\", got null"},
		}, files: root(`{"services": [{"name": "api", "version": null}]}`)},
		{name: "missing name", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/services/0", Message: "service has no \"name\"; every service needs one"},
		}, files: root(`{"services": [{"containers": []}]}`)},
		{name: "missing dockerTag", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 46, Pointer: "/services/0/containers/0", Message: "container has no \"dockerTag\"; every container needs the tag to deploy"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerName": "api"}]}]}`)},
		{name: "invalid name", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "invalid service name \"my api\"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		}, files: root(`{"services": [{"name": "my api"}]}`)},
		{name: "name ends with a dash", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "invalid service name \"api-\"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		}, files: root(`{"services": [{"name": "api-"}]}`)},
		{name: "name too long", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "service name \"a123456789b123456789c123456789d123456789e123456789f123456789abcd\" is 64 characters long; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		}, files: root(`{"services": [{"name": "` + long + `"}]}`)},
		{name: "empty name", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 24, Pointer: "/services/0/name", Message: "empty service name; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		}, files: root(`{"services": [{"name": ""}]}`)},
		{name: "version not SemVer", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 42, Pointer: "/services/0/version", Message: "invalid version \"1.2\" (need MAJOR.MINOR.PATCH); expected SemVer 2.0 such as \"1.4.2\" or \"2.0.0-rc.1+build.5\""},
		}, files: root(`{"services": [{"name": "api", "version": "1.2"}]}`)},
		{name: "version with leading zero", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 42, Pointer: "/services/0/version", Message: "invalid version \"01.2.3\" (MAJOR, MINOR and PATCH must be numbers without leading zeros); expected SemVer 2.0 such as \"1.4.2\" or \"2.0.0-rc.1+build.5\""},
		}, files: root(`{"services": [{"name": "api", "version": "01.2.3"}]}`)},
		{name: "version with v prefix", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 42, Pointer: "/services/0/version", Message: "invalid version \"v1.2.3\" (MAJOR, MINOR and PATCH must be numbers without leading zeros); expected SemVer 2.0 such as \"1.4.2\" or \"2.0.0-rc.1+build.5\""},
		}, files: root(`{"services": [{"name": "api", "version": "v1.2.3"}]}`)},
		{name: "dockerTag starts with a dash", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 60, Pointer: "/services/0/containers/0/dockerTag", Message: "invalid dockerTag \"-latest\"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "-latest"}]}]}`)},
		{name: "dockerTag with a colon", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 60, Pointer: "/services/0/containers/0/dockerTag", Message: "invalid dockerTag \"api:1.0\"; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "api:1.0"}]}]}`)},
		{name: "dockerTag too long", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 60, Pointer: "/services/0/containers/0/dockerTag", Message: "dockerTag \"ta123456789b123456789c123456789d123456789e123456789f1234567… is 129 characters long; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag129 + `"}]}]}`)},
		{name: "dockerDigest uppercase", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 81, Pointer: "/services/0/containers/0/dockerDigest", Message: "invalid dockerDigest \"sha256:F48A20F48CBC2B965E37FF9144048C644890CB37CEFA85FAFC8F…; expected \"sha256:\" followed by 64 lowercase hexadecimal digits"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "1", "dockerDigest": "sha256:F48A20F48CBC2B965E37FF9144048C644890CB37CEFA85FAFC8FAE7F89B15455"}]}]}`)},
		{name: "dockerDigest wrong algorithm", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 81, Pointer: "/services/0/containers/0/dockerDigest", Message: "invalid dockerDigest \"md5:0123456789abcdef0123456789abcdef\"; expected \"sha256:\" followed by 64 lowercase hexadecimal digits"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "1", "dockerDigest": "md5:0123456789abcdef0123456789abcdef"}]}]}`)},
		{name: "dockerName with uppercase", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 61, Pointer: "/services/0/containers/0/dockerName", Message: "invalid dockerName \"Acme/API\"; expected a docker repository name: lowercase path components of letters and digits separated by '/', each joined by '.', '_', '__' or '-', optionally after a registry host"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerName": "Acme/API", "dockerTag": "1"}]}]}`)},
		{name: "dockerName with trailing slash", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 61, Pointer: "/services/0/containers/0/dockerName", Message: "invalid dockerName \"acme/\"; expected a docker repository name: lowercase path components of letters and digits separated by '/', each joined by '.', '_', '__' or '-', optionally after a registry host"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerName": "acme/", "dockerTag": "1"}]}]}`)},
		{name: "unknown root key with suggestion", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 2, Pointer: "/service", Message: "unknown key \"service\"; did you mean \"services\"?"},
		}, files: root(`{"service": []}`)},
		{name: "unknown key differing in case", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 47, Pointer: "/services/0/containers/0/dockertag", Message: "unknown key \"dockertag\"; did you mean \"dockerTag\"?"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockertag": "1"}]}]}`)},
		{name: "unknown key without suggestion", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 31, Pointer: "/services/0/replicas", Message: "unknown key \"replicas\"; accepted keys: name, version, containers"},
		}, files: root(`{"services": [{"name": "api", "replicas": 3}]}`)},
		{name: "duplicate key", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 31, Pointer: "/services/0/name", Message: "duplicate key \"name\" in the same object; give each key once"},
		}, files: root(`{"services": [{"name": "api", "name": "web"}]}`)},
		{name: "duplicate service in one file", want: []Error{
			{File: "environments/e/manifest.json", Line: 3, Column: 12, Pointer: "/services/1/name", Message: "service \"api\" is defined twice in this file (first at line 2, column 12); a file may define a service once"},
		}, files: root("{\"services\": [\n  {\"name\": \"api\"},\n  {\"name\": \"api\"}\n]}")},
		{name: "duplicate container", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 66, Pointer: "/services/0/containers/1", Message: "service \"api\" has two containers with dockerName \"api\" (containers 0 and 1); each container needs its own dockerName"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockerTag": "1"}, {"dockerName": "api", "dockerTag": "2"}]}]}`)},
		{name: "include missing", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"./nope.json\": environments/e/nope.json: file does not exist"},
		}, files: root(`{"includes": ["./nope.json"]}`)},
		{name: "include absolute", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"/etc/passwd\" is an absolute path; includes must be relative to the including file"},
		}, files: root(`{"includes": ["/etc/passwd"]}`)},
		{name: "include leaves the repository", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"../../../etc/passwd\" leaves the repository (resolves to \"../etc/passwd\"); includes must stay inside it"},
		}, files: root(`{"includes": ["../../../etc/passwd"]}`)},
		{name: "include empty", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "empty include path; expected a path relative to this file such as \"./other.json\""},
		}, files: root(`{"includes": [""]}`)},
		{name: "include backslash", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"..\\\\shared\\\\a.json\" contains a backslash; use '/' to separate directories"},
		}, files: root(`{"includes": ["..\\shared\\a.json"]}`)},
		{name: "include a directory", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"../shared\": environments/shared: is a directory, not a manifest file"},
		}, files: map[string]string{"e/manifest.json": `{"includes": ["../shared"]}`, "shared/a.json": `{}`}},
		{name: "include cycle", want: []Error{
			{File: "environments/e/b.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include cycle: environments/e/a.json → environments/e/b.json → environments/e/a.json"},
		}, files: map[string]string{
			"e/manifest.json": `{"includes": ["./a.json"]}`,
			"e/a.json":        `{"includes": ["./b.json"]}`,
			"e/b.json":        `{"includes": ["./a.json"]}`,
		}},
		{name: "cycle reached through two includes is reported once", want: []Error{
			{File: "environments/e/b.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include cycle: environments/e/a.json → environments/e/b.json → environments/e/a.json"},
		}, files: map[string]string{
			"e/manifest.json": `{"includes": ["./a.json", "./c.json"]}`,
			"e/a.json":        `{"includes": ["./b.json"]}`,
			"e/b.json":        `{"includes": ["./a.json"]}`,
			"e/c.json":        `{"includes": ["./a.json"]}`,
		}},
		{name: "self include", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include cycle: environments/e/manifest.json → environments/e/manifest.json"},
		}, files: root(`{"includes": ["./manifest.json"]}`)},
		{name: "environment missing", want: []Error{
			{File: "environments/e/manifest.json", Line: 0, Column: 0, Pointer: "", Message: "reading the environment's manifest: file does not exist"},
		}, files: map[string]string{"other/manifest.json": `{}`}},
		{name: "error in an included file", want: []Error{
			{File: "environments/shared/base.json", Line: 3, Column: 71, Pointer: "/services/0/containers/0/dockerDigest", Message: "invalid dockerDigest \"sha256:abc\"; expected \"sha256:\" followed by 64 lowercase hexadecimal digits"},
		}, files: map[string]string{
			"e/manifest.json":  `{"includes": ["../shared/base.json"]}`,
			"shared/base.json": "{\n  \"services\": [\n    {\"name\": \"api\", \"containers\": [{\"dockerTag\": \"1\", \"dockerDigest\": \"sha256:abc\"}]}\n  ]\n}\n",
		}},
		{name: "every problem in every file", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 62, Pointer: "/services/0/name", Message: "invalid service name \"Api!\"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
			{File: "environments/e/a.json", Line: 1, Column: 58, Pointer: "/services/0/containers/0/dockerTag", Message: "empty dockerTag; expected a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"},
			{File: "environments/e/b.json", Line: 1, Column: 15, Pointer: "/services/0", Message: "syntax error: expected a value, found '}'"},
		}, files: map[string]string{
			"e/manifest.json": `{"includes": ["./a.json", "./b.json"], "services": [{"name": "Api!"}]}`,
			"e/a.json":        `{"services": [{"name": "a", "containers": [{"dockerTag": ""}]}]}`,
			"e/b.json":        `{"services": [}`,
		}},
		{name: "position on a later line counts characters", want: []Error{
			{File: "environments/e/manifest.json", Line: 3, Column: 14, Pointer: "/services/0/name", Message: "invalid service name \"ünïcödé\"; expected a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
			{File: "environments/e/manifest.json", Line: 3, Column: 36, Pointer: "/services/0/version", Message: "invalid version \"x\" (need MAJOR.MINOR.PATCH); expected SemVer 2.0 such as \"1.4.2\" or \"2.0.0-rc.1+build.5\""},
		}, files: root("{\n  \"services\": [\n    {\"name\": \"ünïcödé\", \"version\": \"x\"}\n  ]\n}\n")},
		{name: "file too large", want: []Error{
			{File: "environments/e/manifest.json", Line: 0, Column: 0, Pointer: "", Message: "reading the environment's manifest: file is 71 bytes, over the limit of 20 bytes"},
		}, files: root(`{"services": [` + okSvc + `]}`), opts: []Option{MaxFileSize(20)}},
		{name: "include too deep", want: []Error{
			{File: "environments/e/a.json", Line: 1, Column: 15, Pointer: "/includes/0", Message: "include \"./b.json\" nests deeper than the limit of 1 levels"},
		}, files: map[string]string{
			"e/manifest.json": `{"includes": ["./a.json"]}`,
			"e/a.json":        `{"includes": ["./b.json"]}`,
			"e/b.json":        `{}`,
		}, opts: []Option{MaxDepth(1)}},
		{name: "allowed misspelling of dockerTag still lacks dockerTag", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 46, Pointer: "/services/0/containers/0", Message: "container has no \"dockerTag\"; every container needs the tag to deploy"},
		}, files: root(`{"services": [{"name": "api", "containers": [{"dockertag": "1.0.0"}]}]}`), opts: []Option{AllowUnknownKeys()}},
		{name: "allowed misspelling of name still lacks a name", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 15, Pointer: "/services/0", Message: "service has no \"name\"; every service needs one"},
		}, files: root(`{"services": [{"Name": "api", "containers": [{"dockerTag": "1.0.0"}]}]}`), opts: []Option{AllowUnknownKeys()}},
		{name: "too many files", want: []Error{
			{File: "environments/e/manifest.json", Line: 1, Column: 27, Pointer: "/includes/1", Message: "include \"./b.json\" goes over the limit of 2 distinct files per environment; include chain: environments/e/manifest.json → environments/e/b.json"},
		}, files: map[string]string{
			"e/manifest.json": `{"includes": ["./a.json", "./b.json"]}`,
			"e/a.json":        `{}`,
			"e/b.json":        `{}`,
		}, opts: []Option{MaxFiles(2)}},
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
