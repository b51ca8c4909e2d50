package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/testenv"
)

const (
	passAnnotation = "testenv.tagsync.io/sync-requested"
	servedKey      = "lastSyncRequest"
)

// servedRequest reads the request a stand-in controller last served.
func servedRequest(o client.Object) string { return o.(*corev1.ConfigMap).Data[servedKey] }

// TestRequestPass: each RequestPass returns only once the pass for its own
// fresh request has been served, and one whose request is never served fails
// with the stale request the object reports.
func TestRequestPass(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "passes", Namespace: "default"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	stop := standInController(t, env, cm.Namespace, cm.Name)

	first := testenv.RequestPass(t, env.Client, cm, passAnnotation, servedRequest, 30*time.Second)
	if cm.Annotations[passAnnotation] != first || servedRequest(cm) != first {
		t.Fatalf("after the first pass: annotation %q, served %q; want both %q", cm.Annotations[passAnnotation], servedRequest(cm), first)
	}
	second := testenv.RequestPass(t, env.Client, cm, passAnnotation, servedRequest, 30*time.Second)
	if second == first {
		t.Fatalf("two requests share the value %q", first)
	}
	if servedRequest(cm) != second {
		t.Fatalf("after the second pass: served %q, want %q", servedRequest(cm), second)
	}

	// With no controller left, the next request is never served: RequestPass
	// must fail, not take the second pass for it.
	stop()
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testenv.RequestPass(ft, env.Client, cm, passAnnotation, servedRequest, time.Second)
		ft.record("RequestPass returned")
	}()
	<-done
	msg := ft.message()
	if !strings.Contains(msg, "not reached within") || !strings.Contains(msg, fmt.Sprintf("%q", second)) || !strings.Contains(msg, "ConfigMap default/passes") {
		t.Fatalf("an unserved request: %q; want a failure naming the ConfigMap and the stale request %q", msg, second)
	}
}

// standInController plays a controller that records the request it served:
// whenever the ConfigMap's annotation differs from data[servedKey], it
// copies it there. The returned func stops it and waits until it has.
func standInController(t *testing.T, env *testenv.Env, namespace, name string) (stop func()) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// Without a resource version the watch starts with the current
			// object, so a watch that ends is simply opened again.
			w, err := cs.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
			if err != nil {
				select { // retry, but do not spin while the server refuses
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok || cm.Annotations[passAnnotation] == cm.Data[servedKey] {
					continue
				}
				patch, _ := json.Marshal(map[string]any{"data": map[string]string{servedKey: cm.Annotations[passAnnotation]}})
				if _, err := cs.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("stand-in controller: %v", err)
				}
			}
			w.Stop()
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// fatalTB records the first failure of a helper under test and ends its
// goroutine as testing.T's FailNow does.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) {
	f.record(fmt.Sprint(args...))
	runtime.Goexit()
}

func (f *fatalTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.msg == "" {
		f.msg = msg
	}
}

func (f *fatalTB) message() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}
