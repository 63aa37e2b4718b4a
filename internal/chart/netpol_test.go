package chart

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// peer is one end of a connection a NetworkPolicy is asked about: an
// address, or a pod (its labels, its namespace's name and labels).
type peer struct {
	ip       string
	ns       string
	nsLabels map[string]string
	pod      map[string]string
}

// conn is a connection to or from the policy's pods.
type conn struct {
	name  string
	other peer
	port  int32
	proto corev1.Protocol
}

func (c conn) String() string {
	who := c.other.ip
	if c.other.pod != nil {
		who = fmt.Sprintf("pod %v in %s", c.other.pod, c.other.ns)
	}
	return fmt.Sprintf("%s (%s port %d/%s)", c.name, who, c.port, c.proto)
}

// networkPolicy converts the rendered NetworkPolicy.
func networkPolicy(t *testing.T, o *unstructured.Unstructured) *networkingv1.NetworkPolicy {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
		t.Fatalf("converting NetworkPolicy %s: %v", o.GetName(), err)
	}
	return &np
}

// allows evaluates np as a network plugin does (the API server stores
// policies but enforces none): whether c, egress or ingress, is allowed
// for a pod np selects.
func allows(t *testing.T, np *networkingv1.NetworkPolicy, egress bool, c conn) bool {
	t.Helper()
	if egress {
		for _, r := range np.Spec.Egress {
			if portsMatch(r.Ports, c) && peersMatch(t, np.Namespace, r.To, c.other) {
				return true
			}
		}
		return false
	}
	for _, r := range np.Spec.Ingress {
		if portsMatch(r.Ports, c) && peersMatch(t, np.Namespace, r.From, c.other) {
			return true
		}
	}
	return false
}

func portsMatch(ports []networkingv1.NetworkPolicyPort, c conn) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if proto != c.proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		end := p.Port.IntVal
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if p.Port.IntVal != 0 && c.port >= p.Port.IntVal && c.port <= end {
			return true
		}
	}
	return false
}

func peersMatch(t *testing.T, policyNS string, peers []networkingv1.NetworkPolicyPeer, o peer) bool {
	t.Helper()
	if len(peers) == 0 {
		return true
	}
	sel := func(s *metav1.LabelSelector, l map[string]string) bool {
		ls, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatalf("label selector %v: %v", s, err)
		}
		return ls.Matches(labels.Set(l))
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if o.ip == "" {
				continue
			}
			ip := netip.MustParseAddr(o.ip)
			if !netip.MustParsePrefix(p.IPBlock.CIDR).Contains(ip) {
				continue
			}
			excepted := false
			for _, e := range p.IPBlock.Except {
				excepted = excepted || netip.MustParsePrefix(e).Contains(ip)
			}
			if !excepted {
				return true
			}
		case o.pod != nil:
			nsOK := o.ns == policyNS
			if p.NamespaceSelector != nil {
				nsOK = sel(p.NamespaceSelector, o.nsLabels)
			}
			podOK := p.PodSelector == nil || sel(p.PodSelector, o.pod)
			if nsOK && podOK {
				return true
			}
		}
	}
	return false
}

// addr is a peer at an address outside the cluster's pods.
func addr(ip string) peer { return peer{ip: ip} }

// TestNetworkPolicy: what the reconciler's pods may receive and send, by
// the rendered NetworkPolicy's own rules. In: port 8080 only. Out: DNS,
// the API server, and GitHub, git and registries on 443 and the ports the
// configuration names; nothing else (databases, link-local metadata
// services, other ports).
func TestNetworkPolicy(t *testing.T) {
	rel := "rel"
	inRel := func(l map[string]string) peer {
		return peer{ns: rel, nsLabels: map[string]string{"kubernetes.io/metadata.name": rel}, pod: l}
	}
	podIn := func(ns string, l map[string]string) peer {
		return peer{ns: ns, nsLabels: map[string]string{"kubernetes.io/metadata.name": ns}, pod: l}
	}
	prbot := map[string]string{"app.kubernetes.io/name": "stagehand", "app.kubernetes.io/instance": "sh", "app.kubernetes.io/component": "prbot"}
	reconciler := map[string]string{"app.kubernetes.io/name": "stagehand", "app.kubernetes.io/instance": "sh", "app.kubernetes.io/component": "reconciler"}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	type want struct {
		egress, ingress []conn
	}
	tests := []struct {
		name         string
		values       func(t *testing.T) []string
		allow, block want
	}{
		{
			name:   "default values",
			values: func(*testing.T) []string { return nil },
			allow: want{
				egress: []conn{
					{"cluster DNS", addr("10.96.0.10"), 53, udp}, {"cluster DNS over TCP", addr("10.96.0.10"), 53, tcp},
					{"NodeLocal DNSCache", addr("169.254.20.10"), 53, udp},
					{"the API server's endpoint", addr("172.18.0.2"), 6443, tcp}, {"a managed API server", addr("34.1.2.3"), 443, tcp},
					{"GitHub", addr("140.82.112.3"), 443, tcp}, {"GitHub over IPv6", addr("2606:50c0:8000::154"), 443, tcp},
					{"a registry", addr("52.1.2.3"), 443, tcp},
				},
				ingress: []conn{
					{"the Ingress controller", podIn("ingress-nginx", map[string]string{"app": "ingress-nginx"}), 8080, tcp},
					{"Prometheus", addr("10.244.3.4"), 8080, tcp},
				},
			},
			block: want{
				egress: []conn{
					{"a database in the cluster", podIn("apps-prod", map[string]string{"app": "postgres"}), 5432, tcp},
					{"a database by address", addr("10.0.0.5"), 5432, tcp},
					{"GitHub over plain HTTP", addr("140.82.112.3"), 80, tcp},
					{"GitHub over SSH (the source is https)", addr("140.82.112.3"), 22, tcp},
					{"the cloud metadata service", addr("169.254.169.254"), 80, tcp},
					{"the cloud metadata service on 443", addr("169.254.169.254"), 443, tcp},
					{"an IPv6 link-local address", addr("fe80::1"), 443, tcp},
					{"SMTP", addr("52.1.2.3"), 25, tcp},
					{"DNS port over a protocol DNS does not use", addr("10.96.0.10"), 53, corev1.ProtocolSCTP},
				},
				ingress: []conn{
					{"another port of the pod", addr("10.244.3.4"), 9090, tcp},
					{"UDP to the API port", addr("10.244.3.4"), 8080, udp},
				},
			},
		},
		{
			name: "an ssh:// source on port 2222, an http:// GitHub Enterprise API, a plain-HTTP registry",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{"config": map[string]any{
					"source":   map[string]any{"url": "ssh://git@git.example.com:2222/acme/manifests.git"},
					"github":   map[string]any{"apiURL": "http://ghe.example.com/api/v3", "owner": "acme", "repo": "manifests"},
					"registry": map[string]any{"insecure": []any{"registry.internal:5000", "registry.lan"}},
				}})}
			},
			allow: want{egress: []conn{
				{"the git server", addr("203.0.113.7"), 2222, tcp}, {"GitHub Enterprise", addr("203.0.113.8"), 80, tcp},
				{"the plain-HTTP registry", addr("203.0.113.9"), 5000, tcp}, {"GitHub", addr("140.82.112.3"), 443, tcp},
			}},
			block: want{egress: []conn{
				{"plain SSH", addr("203.0.113.7"), 22, tcp}, {"the metadata service on port 80", addr("169.254.169.254"), 80, tcp},
			}},
		},
		{
			name:   "full values: narrowed peers, an extra rule, prbot let in",
			values: func(t *testing.T) []string { return []string{fullValues(t)} },
			allow: want{
				egress: []conn{
					{"kube-dns", podIn("kube-system", map[string]string{"k8s-app": "kube-dns"}), 53, udp},
					{"the API server's endpoint", addr("10.0.0.10"), 6443, tcp},
					{"GitHub", addr("140.82.112.3"), 443, tcp},
					{"the plain-HTTP registry", addr("10.20.0.5"), 5000, tcp},
					{"Prometheus (the extra rule)", podIn("monitoring", map[string]string{"app": "prometheus"}), 9090, tcp},
				},
				ingress: []conn{
					{"the Ingress controller", podIn("ingress-nginx", map[string]string{"app": "ingress-nginx"}), 8080, tcp},
					{"prbot", inRel(prbot), 8080, tcp},
				},
			},
			block: want{
				egress: []conn{
					{"another DNS server", addr("8.8.8.8"), 53, udp},
					{"another address on the API server's port", addr("10.0.0.11"), 6443, tcp},
					{"the API server's port 443 (not listed)", addr("10.0.0.10"), 443, tcp},
					{"an address outside the remote ranges", addr("52.1.2.3"), 443, tcp},
				},
				ingress: []conn{
					{"a pod of another namespace", podIn("apps-prod", map[string]string{"app": "web"}), 8080, tcp},
					{"an address", addr("10.244.3.4"), 8080, tcp},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			np := networkPolicy(t, find(t, render(t, rel, tc.values(t)...), "NetworkPolicy", rel, "sh-stagehand"))
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("policyTypes (-want +got):\n%s", diff)
			}
			if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(reconciler)) ||
				labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(prbot)) {
				t.Errorf("podSelector %v: want the reconciler's pods and not prbot's", np.Spec.PodSelector.MatchLabels)
			}
			for _, c := range tc.allow.egress {
				if !allows(t, np, true, c) {
					t.Errorf("the reconciler may not reach %s; it needs to", c)
				}
			}
			for _, c := range tc.block.egress {
				if allows(t, np, true, c) {
					t.Errorf("the reconciler may reach %s; it must not", c)
				}
			}
			for _, c := range tc.allow.ingress {
				if !allows(t, np, false, c) {
					t.Errorf("%s may not reach the reconciler; it needs to", c)
				}
			}
			for _, c := range tc.block.ingress {
				if allows(t, np, false, c) {
					t.Errorf("%s may reach the reconciler; it must not", c)
				}
			}
		})
	}
}

// TestNetworkPolicyPrbot: prbot's pods receive webhooks on 8080 and reach
// only DNS, GitHub and the reconciler's API (deploy locks); not the API
// server, which it has no token for.
func TestNetworkPolicyPrbot(t *testing.T) {
	np := networkPolicy(t, find(t, render(t, "rel", fullValues(t)), "NetworkPolicy", "rel", "sh-stagehand-prbot"))
	reconciler := peer{ns: "rel", pod: map[string]string{"app.kubernetes.io/name": "stagehand", "app.kubernetes.io/instance": "sh", "app.kubernetes.io/component": "reconciler"}}
	for _, c := range []conn{
		{"kube-dns", peer{ns: "kube-system", nsLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}, pod: map[string]string{"k8s-app": "kube-dns"}}, 53, corev1.ProtocolUDP},
		{"GitHub", addr("140.82.112.3"), 443, corev1.ProtocolTCP},
		{"the reconciler's API", reconciler, 8080, corev1.ProtocolTCP},
	} {
		if !allows(t, np, true, c) {
			t.Errorf("prbot may not reach %s; it needs to", c)
		}
	}
	for _, c := range []conn{
		{"the API server", addr("10.0.0.10"), 6443, corev1.ProtocolTCP},
		{"another pod's 8080", peer{ns: "rel", pod: map[string]string{"app": "other"}}, 8080, corev1.ProtocolTCP},
		{"a database", addr("10.20.0.5"), 5432, corev1.ProtocolTCP},
	} {
		if allows(t, np, true, c) {
			t.Errorf("prbot may reach %s; it must not", c)
		}
	}
	if !allows(t, np, false, conn{"the Ingress controller", peer{ns: "ingress-nginx", nsLabels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}, pod: map[string]string{}}, 8080, corev1.ProtocolTCP}) {
		t.Error("the Ingress controller may not reach prbot's webhook port")
	}
}

// TestNetworkPolicyOptOut: networkPolicy.enabled false renders none.
func TestNetworkPolicyOptOut(t *testing.T) {
	objs := render(t, "rel", fullValues(t), valuesFile(t, map[string]any{"networkPolicy": map[string]any{"enabled": false}}))
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" {
			t.Errorf("NetworkPolicy %s rendered with networkPolicy.enabled false", o.GetName())
		}
	}
}

// TestIngressTLS: the Ingress renders only with TLS covering each of its
// hosts, unless ingress.allowPlainHTTP says TLS ends before it; the refusal
// names the value.
func TestIngressTLS(t *testing.T) {
	tls := func(hosts ...any) []any {
		b := map[string]any{"secretName": "stagehand-tls"}
		if hosts != nil {
			b["hosts"] = hosts
		}
		return []any{b}
	}
	tests := []struct {
		name    string
		ingress map[string]any
		refused string // "" when it renders
		wantTLS bool
	}{
		{name: "no TLS", ingress: map[string]any{"hosts": []any{"stagehand.example.com"}},
			refused: "ingress.tls is empty"},
		{name: "no TLS and no host", ingress: map[string]any{},
			refused: "ingress.allowPlainHTTP: true"},
		{name: "TLS for another host", ingress: map[string]any{"hosts": []any{"stagehand.example.com", "hooks.example.com"}, "tls": tls("stagehand.example.com")},
			refused: "ingress.hosts: hooks.example.com is in no ingress.tls[].hosts"},
		{name: "a wildcard covers one label only", ingress: map[string]any{"hosts": []any{"a.b.example.com"}, "tls": tls("*.example.com")},
			refused: "a.b.example.com"},
		{name: "TLS for the host", ingress: map[string]any{"hosts": []any{"stagehand.example.com"}, "tls": tls("stagehand.example.com")}, wantTLS: true},
		{name: "TLS for the host, in other case", ingress: map[string]any{"hosts": []any{"Stagehand.Example.com"}, "tls": tls("stagehand.example.com")}, wantTLS: true},
		{name: "a wildcard", ingress: map[string]any{"hosts": []any{"stagehand.example.com"}, "tls": tls("*.example.com")}, wantTLS: true},
		{name: "a TLS block without hosts", ingress: map[string]any{"hosts": []any{"stagehand.example.com"}, "tls": tls()}, wantTLS: true},
		{name: "plain HTTP allowed", ingress: map[string]any{"hosts": []any{"stagehand.example.com"}, "allowPlainHTTP": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{"enabled": true}
			for k, v := range tc.ingress {
				in[k] = v
			}
			values := valuesFile(t, map[string]any{"ingress": in})
			if tc.refused != "" {
				_, err := helm(t).Template(t.Context(), Release{Dir: chartDir(t), Name: "sh", Namespace: "rel"}, values)
				if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "ingress.allowPlainHTTP") {
					t.Errorf("helm template = %v, want a refusal containing %q and naming ingress.allowPlainHTTP", err, tc.refused)
				}
				return
			}
			ing := find(t, render(t, "rel", values), "Ingress", "rel", "sh-stagehand")
			got, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls")
			if (len(got) > 0) != tc.wantTLS {
				t.Errorf("spec.tls = %v, want TLS %v", got, tc.wantTLS)
			}
		})
	}
}
