package ui

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// renderer writes the page's templates: each page inside the layout, with
// the message a form left for it (the flash cookie), gzipped when the
// browser takes it; and the page of an error.
type renderer struct {
	o       *options
	cookies *cookies
	pages   map[string]*template.Template
}

// newRenderer parses every page of pageNames.
func newRenderer(o *options, c *cookies) (*renderer, error) {
	rn := &renderer{o: o, cookies: c, pages: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(rn.funcs()).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing page %s: %w", name, err)
		}
		rn.pages[name] = t
	}
	return rn, nil
}

// flashCookie is a __Host- cookie, as the others (see sessionCookie).
const flashCookie = "__Host-stagehand_flash"

// maxFlashValue bounds the sealed flash cookie's value: browsers keep
// cookies of up to 4096 bytes, name and attributes included, and silently
// drop larger ones, which would lose the message.
const maxFlashValue = 3800

// flashNext shows msg on the next page rendered. A message that would not
// fit a cookie (it quotes what the form sent) is shortened, ending in "…".
func (rn *renderer) flashNext(w http.ResponseWriter, r *http.Request, msg string, isErr bool) {
	for n := len(msg); ; n /= 2 {
		f := flash{Msg: clip(msg, n), Err: isErr}
		if sealed, err := rn.cookies.seal.seal(flashCookie, f); err != nil || len(sealed) <= maxFlashValue || n == 0 {
			_ = rn.cookies.set(w, flashCookie, f, time.Minute)
			return
		}
	}
}

// clip returns s cut to at most n bytes on a rune boundary, with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// render executes page p.name into w with status code.
func (rn *renderer) render(w http.ResponseWriter, r *http.Request, code int, p page) {
	p.Now = rn.o.now()
	p.Signins = signins{GitHub: rn.o.oauth != nil, Demo: rn.demoFor(r)}
	if p.Flash == nil {
		if c, err := r.Cookie(flashCookie); err == nil {
			var f flash
			if rn.cookies.seal.open(flashCookie, c.Value, &f) == nil {
				p.Flash = &f
			}
			clearCookie(w, flashCookie)
		}
	}
	var buf bytes.Buffer
	if err := rn.pages[p.name].ExecuteTemplate(&buf, "layout", p); err != nil {
		http.Error(w, "rendering page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Add("Vary", "Accept-Encoding")
	if buf.Len() > 1400 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		// The overview of 500 services is 700 KB of repetitive HTML, about 30 KB gzipped.
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(code)
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write(buf.Bytes())
		_ = zw.Close()
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// failErr shows err's page with the status the API's table gives it
// (WithErrorStatus).
func (rn *renderer) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := rn.o.statusOf(err)
	rn.fail(w, r, status, err.Error())
}

// fail answers a page saying msg.
func (rn *renderer) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	rn.render(w, r, code, page{name: "message", Title: http.StatusText(code), Flash: &flash{Msg: msg, Err: true}})
}

// demoFor is the demo login offered to r: only to a loopback client.
func (rn *renderer) demoFor(r *http.Request) string {
	if rn.o.demoLogin == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return ""
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		return "" // a proxy on this host forwards someone else
	}
	return rn.o.demoLogin
}

// commitURL links a revision, or "" without WithCommitURL.
func (rn *renderer) commitURL(rev string) string {
	if rn.o.commitURL == "" || rev == "" {
		return ""
	}
	return strings.ReplaceAll(rn.o.commitURL, "{revision}", rev)
}

// funcs are the templates' functions.
func (rn *renderer) funcs() template.FuncMap {
	return template.FuncMap{
		"states":     func() []string { return cellStates },
		"stateIcon":  func(st string) string { return stateIcons[st] },
		"stateClass": stateClass,
		"cellOf":     cellOf,
		"resultIcon": func(r string) string {
			switch r {
			case approval.ResultSucceeded:
				return "✓"
			case approval.ResultRejected:
				return "⊖"
			}
			return "✗"
		},
		"resultClass": func(r string) string {
			switch r {
			case approval.ResultSucceeded:
				return "in-sync"
			case approval.ResultRejected:
				return "blocked"
			}
			return "failed"
		},
		"join":     strings.Join,
		"add":      func(a, b int) int { return a + b },
		"sub":      func(a, b int) int { return a - b },
		"shortRev": gitsource.ShortRevision,
		"shortDigest": func(d string) string {
			if len(d) > len("sha256:")+12 {
				return d[:len("sha256:")+12] + "…"
			}
			return d
		},
		"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"when":  func(t time.Time) string { return t.In(rn.o.loc).Format("Mon 2 Jan 2006, 15:04 MST") },
		"until": func(t time.Time) string { return t.In(rn.o.loc).Format("Mon 2 Jan, 15:04") },
		"ago":   func(t time.Time) string { return ago(rn.o.now().Sub(t)) },
		"revArgs": func(d environmentView, rev string) revLink {
			return revLink{Rev: rev, URL: d.Commit(rev)}
		},
	}
}
