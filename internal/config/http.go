package config

import (
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
)

// HTTP is an HTTP server's limits: reconciler.yaml's server.http and
// prbot.yaml's http read the same keys, with the same defaults
// (httpserve.DefaultLimits).
type HTTP struct {
	// ReadHeaderTimeout is how long a client may take to send its headers.
	ReadHeaderTimeout Duration `json:"readHeaderTimeout"`
	// ReadTimeout is how long a client may take to send its whole request.
	ReadTimeout Duration `json:"readTimeout"`
	// WriteTimeout is how long an answer may take.
	WriteTimeout Duration `json:"writeTimeout"`
	// IdleTimeout is how long an idle keep-alive connection is kept.
	IdleTimeout Duration `json:"idleTimeout"`
	// MaxHeaderBytes is the largest header block; a larger one gets 431.
	MaxHeaderBytes int `json:"maxHeaderBytes"`
}

// Default fills in each limit left out from httpserve.DefaultLimits.
func (h *HTTP) Default() {
	d := httpserve.DefaultLimits
	for _, f := range []struct {
		v   *Duration
		def Duration
	}{{&h.ReadHeaderTimeout, Duration{d.ReadHeaderTimeout}}, {&h.ReadTimeout, Duration{d.ReadTimeout}},
		{&h.WriteTimeout, Duration{d.WriteTimeout}}, {&h.IdleTimeout, Duration{d.IdleTimeout}}} {
		if f.v.Duration == 0 {
			*f.v = f.def
		}
	}
	if h.MaxHeaderBytes == 0 {
		h.MaxHeaderBytes = d.MaxHeaderBytes
	}
}

// Limits are the limits to build the server with.
func (h HTTP) Limits() httpserve.Limits {
	return httpserve.Limits{ReadHeaderTimeout: h.ReadHeaderTimeout.Duration, ReadTimeout: h.ReadTimeout.Duration,
		WriteTimeout: h.WriteTimeout.Duration, IdleTimeout: h.IdleTimeout.Duration, MaxHeaderBytes: h.MaxHeaderBytes}
}

// Validate reports each limit out of range, naming it under prefix
// ("server.http" or "http").
func (h HTTP) Validate(prefix string, bad func(field, format string, a ...any)) {
	for _, f := range []struct {
		key string
		v   Duration
	}{{"readHeaderTimeout", h.ReadHeaderTimeout}, {"readTimeout", h.ReadTimeout}, {"writeTimeout", h.WriteTimeout}, {"idleTimeout", h.IdleTimeout}} {
		if f.v.Duration <= 0 {
			bad(prefix+"."+f.key, "%s: want a positive duration", f.v.Duration)
		}
	}
	if h.MaxHeaderBytes < 1024 || h.MaxHeaderBytes > 1<<20 {
		bad(prefix+".maxHeaderBytes", "%d: want from 1024 to 1048576 bytes (default %d)", h.MaxHeaderBytes, httpserve.DefaultLimits.MaxHeaderBytes)
	}
}
