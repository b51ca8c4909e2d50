package testenv

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tagsync/tagsync/internal/audit"
)

// Main is a controller suite's TestMain: the controllers log to stderr at
// the level TAGSYNC_TEST_V gives (errors only when unset), and, when use is
// not nil, the package's tests share one control plane (RunMain).
func Main(m *testing.M, use func(*Env)) {
	setTestLogger()
	if use == nil {
		os.Exit(m.Run())
	}
	os.Exit(RunMain(m, use))
}

// setTestLogger sends controller logs to stderr at the level TAGSYNC_TEST_V
// gives.
func setTestLogger() {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(-logVerbosity()))))
}

// logVerbosity is the controller log level for tests: TAGSYNC_TEST_V, else
// errors only.
func logVerbosity() int {
	if v, err := strconv.Atoi(os.Getenv("TAGSYNC_TEST_V")); err == nil {
		return v
	}
	return -2
}

// StartManager runs mgr until the returned stop is called, which waits for
// it to end and fails t if it ended with an error.
func StartManager(ctx context.Context, t testing.TB, mgr manager.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
}

// LastSyncRequest is the status.lastSyncRequest of a tagsync object (every
// kind a controller serves sync requests for has it): the served function
// of RequestPass.
func LastSyncRequest(obj client.Object) string {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return ""
	}
	status, _ := u["status"].(map[string]any)
	s, _ := status["lastSyncRequest"].(string)
	return s
}

// AuditRecords parses an audit log's text, failing t when it is malformed.
func AuditRecords(t testing.TB, log string) []audit.Record {
	t.Helper()
	out, err := audit.Read(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
