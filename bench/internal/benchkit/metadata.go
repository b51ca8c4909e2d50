package benchkit

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// WaitMatched waits until a CloudMetadata is Ready for its generation with
// every resource (want) matched and in sync; running reports the
// controller's exit, logFile is its log (quoted on failure).
func WaitMatched(ctx context.Context, c client.Client, namespace, name string, want int, running func() error, logFile string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		cm := &v1alpha1.CloudMetadata{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady)
		last = fmt.Sprintf("matched %d, inSync %d, failed %d, condition %+v", cm.Status.Matched, cm.Status.InSync, cm.Status.Failed, cond)
		return cond != nil && cond.Status == metav1.ConditionTrue && cm.Status.ObservedGeneration == cm.Generation &&
			int(cm.Status.Matched) == want && int(cm.Status.InSync) == want, nil
	})
	if err != nil {
		return fmt.Errorf("CloudMetadata %s: %w (last: %s); controller log:\n%s", name, err, last, Tail(logFile, 20))
	}
	return nil
}

// RequestPass bumps the sync-request annotation of a CloudMetadata and
// waits until its status says the pass was served; it returns the seconds
// from the request.
func RequestPass(ctx context.Context, c client.Client, namespace, name string, running func() error, timeout time.Duration) (float64, error) {
	value := fmt.Sprint(time.Now().UnixNano())
	cm := &v1alpha1.CloudMetadata{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return 0, err
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[v1alpha1.SyncRequestAnnotation] = value
	start := time.Now()
	if err := c.Patch(ctx, cm, patch); err != nil {
		return 0, err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return false, err
		}
		return cm.Status.LastSyncRequest == value, nil
	})
	return Secs(time.Since(start)), err
}

// KubeRequests counts, from a controller's metrics, its Kubernetes API
// requests by cluster (the management cluster, whose API server is
// mgmtServer, or a workload cluster) and method:
// "requests.management.PATCH".
func KubeRequests(text, mgmtServer string) map[string]int {
	mgmt := hostOf(mgmtServer)
	out := map[string]int{}
	EachSample(text, "rest_client_requests_total", func(series string, v float64) {
		where := "workload"
		if Label(series, "host") == mgmt {
			where = "management"
		}
		out["requests."+where+"."+Label(series, "method")] += int(v)
	})
	return out
}

func hostOf(server string) string {
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		return u.Host
	}
	return server
}
