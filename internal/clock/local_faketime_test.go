//go:build stagehand_faketime

package clock

import (
	"testing"
	"time"
)

func TestLocalOffset(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{{"", 0}, {"2h", 2 * time.Hour}, {"-2h", -2 * time.Hour}} {
		t.Run(c.env, func(t *testing.T) {
			now, err := Local(func(k string) (string, bool) { return c.env, k == OffsetEnv })
			if err != nil {
				t.Fatal(err)
			}
			if d := now().Sub(time.Now()) - c.want; d < -time.Second || d > time.Second {
				t.Errorf("Local with %s=%q is off by %s from the host's clock shifted %s", OffsetEnv, c.env, d, c.want)
			}
		})
	}
	if _, err := Local(func(string) (string, bool) { return "two hours", true }); err == nil {
		t.Error("Local with a bad offset: no error")
	}
}
