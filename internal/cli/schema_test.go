package cli

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/clitest"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestNewerStateSchemaAnswers503: on the real daemon, API and control
// plane, an environment whose state a newer release wrote (its schema.json
// says this build may not read it) is answered 503 with code
// NewerStateSchema and the state error's words (upgrade this replica),
// where it was 500 Internal; the other environment still answers, and
// the state is left as the newer release wrote it.
func TestNewerStateSchemaAnswers503(t *testing.T) {
	var stateNS string
	base, _, _ := clitest.WaitWorld(t, cluster.Env(t), func(cfg *config.Config) daemon.Option {
		stateNS = cfg.State.Namespace
		return daemon.WithLogger(logr.Discard())
	})
	ctx := context.Background()
	c := testClient(t, base[2], base[4])
	cms := cluster.Env(t).Clientset.CoreV1().ConfigMaps(stateNS)
	testenv.WaitFor(t, 60*time.Second, "prod's state written", func() bool {
		_, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
		return err == nil
	})
	newer := state.SchemaVersion + 1
	testenv.WaitFor(t, 30*time.Second, "prod's state stamped with a newer schema", func() bool {
		cm, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
		if err != nil {
			return false
		}
		cm.Data["schema.json"] = `{"version":` + strconv.Itoa(newer) + `,"oldestReader":` + strconv.Itoa(newer) + `}`
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{}) // a conflict with the daemon's write: again
		return err == nil
	})

	_, err := c.Environment(ctx, "prod")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeNewerStateSchema {
		t.Fatalf("GET prod = %v, want 503 %s", err, api.CodeNewerStateSchema)
	}
	var se state.SchemaError
	se.ConfigMap, se.Found, se.OldestReader, se.Build = stateNS+"/"+state.ConfigMapName("prod"), newer, newer, state.SchemaVersion
	if !strings.Contains(ae.Message, se.Error()) {
		t.Errorf("message %q, want it to say the state's error %q", ae.Message, se.Error())
	}
	if _, err := c.Environment(ctx, "devel"); err != nil {
		t.Errorf("GET devel = %v, want it answered", err)
	}
	cm, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil || cm.Data["schema.json"] != `{"version":`+strconv.Itoa(newer)+`,"oldestReader":`+strconv.Itoa(newer)+`}` {
		t.Errorf("prod's schema.json after the answer: %v %q, want the newer release's", err, cm.Data["schema.json"])
	}
}
