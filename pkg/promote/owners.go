package promote

import (
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	ownersKeys     = []string{"repositories", "allowNewServices"}
	bumpClaimsKeys = []string{"ref", "workflowRef", "event"}
	ownedFileRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.json$`)
	// repositoryRE accepts OWNER/NAME and GitLab's group/subgroup/project.
	repositoryRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)
)

// owners parses the owners mapping: file name → list of repositories, or
// file name → {repositories, allowNewServices}.
func (p *parser) owners(n *yaml.Node, at string) map[string]FileOwners {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of file names to repositories, got %s", kindName(n))
		return nil
	}
	out := map[string]FileOwners{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fat := at + "." + k.Value
		if !ownedFileRE.MatchString(k.Value) {
			p.errorf(k, fat, "%q: want a file base name ending in .json, e.g. checkout-api.json", k.Value)
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.errorf(k, fat, "duplicate file %q", k.Value)
			continue
		}
		var o FileOwners
		switch v.Kind {
		case yaml.SequenceNode:
			o.Repositories = p.repositories(v, fat)
		case yaml.MappingNode:
			fields := p.mapping(v, fat, ownersKeys)
			if f, ok := fields["repositories"]; ok {
				o.Repositories = p.repositories(f.value, fat+".repositories")
			} else if fields != nil {
				p.errorf(v, fat, "missing key repositories")
			}
			if f, ok := fields["allowNewServices"]; ok {
				o.AllowNewServices = p.boolean(f.value, fat+".allowNewServices")
			}
		default:
			p.errorf(v, fat, "want a list of repositories or a mapping with repositories, got %s", kindName(v))
		}
		out[k.Value] = o
	}
	return out
}

func (p *parser) repositories(n *yaml.Node, at string) []string {
	list := p.strings(n, at)
	for i, r := range list {
		el := n
		if n.Kind == yaml.SequenceNode {
			el = n.Content[i]
		}
		if r != "" && (!repositoryRE.MatchString(r) || slices.Contains(strings.Split(r, "/"), ".") || slices.Contains(strings.Split(r, "/"), "..")) {
			p.errorf(el, at, "%q: want a repository path such as acme/checkout-api (GitLab: group/subgroup/project)", r)
		}
	}
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		p.errorf(n, at, "want at least one repository")
	}
	return list
}

func (p *parser) bumpClaims(n *yaml.Node, at string) BumpClaims {
	fields := p.mapping(n, at, bumpClaimsKeys)
	var c BumpClaims
	if f, ok := fields["ref"]; ok {
		c.Ref = p.strings(f.value, at+".ref")
	}
	if f, ok := fields["workflowRef"]; ok {
		c.WorkflowRef = p.strings(f.value, at+".workflowRef")
	}
	if f, ok := fields["event"]; ok {
		c.Event = p.strings(f.value, at+".event")
	}
	return c
}

// strings accepts one string or a list of strings.
func (p *parser) strings(n *yaml.Node, at string) []string {
	if n.Kind == yaml.ScalarNode {
		if s := p.str(n, at); s != "" {
			return []string{s}
		}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, at, "want a string or a list of strings, got %s", kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, e := range n.Content {
		out = append(out, p.str(e, at))
	}
	return out
}
