package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// WebhookAddressAnnotation on the leader-election Lease is the host:port at
// which the holder serves the Event Grid webhook (EventsOptions.
// AdvertiseAddress). The holder writes it with every acquire and renewal,
// in the same update that names it holder, so the annotation always
// belongs to spec.holderIdentity; followers forward deliveries there once
// they have checked it is the holder's Pod's (see peers).
const WebhookAddressAnnotation = "tagsync.io/events-webhook-address"

// leaderLock is the Lease lock of a replica that advertises its webhook:
// controller-runtime's own Lease lock (identity hostname_uuid, the same
// client timeout), whose creates and updates carry the annotation.
type leaderLock struct {
	*resourcelock.LeaseLock
	leases coordinationv1client.LeaseInterface
	// holder caches the last read of the Lease.
	mu       sync.Mutex
	readAt   time.Time
	holderID string
	addr     string
}

// newLeaderLock builds the lock for o's Lease, advertising addr, and the
// peers it proves itself to; nil when leader election is off, there is
// nothing to advertise, or no peer token proves the replicas to one
// another (then followers answer deliveries 503, and Event Grid retries).
// The lock's identity starts with the replica's Pod name, which followers
// check the leader's address against.
func newLeaderLock(ctx context.Context, cfg *rest.Config, o Options) (*leaderLock, *peers, error) {
	addr := o.Events.AdvertiseAddress
	if !o.LeaderElection || addr == "" || !o.Events.on() || o.Events.PeerTokenFile == "" {
		return nil, nil, nil
	}
	p, err := newPeers(ctx, cfg, o.Events.PeerTokenFile)
	if err != nil {
		return nil, nil, err
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	if o.RenewDeadline > 0 {
		cfg.Timeout = max(o.RenewDeadline/2, time.Second) // as controller-runtime sets it
	}
	client, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	leases := client.Leases(o.LeaderElectionNamespace)
	lock := &leaderLock{
		LeaseLock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectionNamespace, Name: o.LeaderElectionID},
			Client:     annotatedLeases{LeasesGetter: client, key: WebhookAddressAnnotation, value: addr},
			LockConfig: resourcelock.ResourceLockConfig{Identity: p.self.pod + "_" + string(uuid.NewUUID())},
		},
		leases: leases,
	}
	p.lock = lock
	return lock, p, nil
}

// recordTo makes the lock record its events ("became leader") as
// controller-runtime's does.
func (l *leaderLock) recordTo(mgr ctrl.Manager) {
	//lint:ignore SA1019 client-go's leader election records with the old events API, as controller-runtime's own lock does
	l.LockConfig.EventRecorder = mgr.GetEventRecorderFor(l.Identity())
}

// holder is the Lease's holder identity and the webhook address it
// advertises ("" when the Lease has no holder). A read of the Lease at most
// maxAge old is reused, so held deliveries share one read.
func (l *leaderLock) holder(ctx context.Context, maxAge time.Duration) (holder, addr string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.readAt) > maxAge {
		lease, err := l.leases.Get(ctx, l.LeaseMeta.Name, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("reading the leader-election Lease: %w", err)
		}
		l.readAt, l.holderID, l.addr = time.Now(), "", ""
		if h := lease.Spec.HolderIdentity; h != nil {
			l.holderID, l.addr = *h, lease.Annotations[WebhookAddressAnnotation]
		}
	}
	return l.holderID, l.addr, nil
}

// annotatedLeases sets an annotation on every Lease created or updated
// through it.
type annotatedLeases struct {
	coordinationv1client.LeasesGetter
	key, value string
}

func (a annotatedLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return annotatedLease{LeaseInterface: a.LeasesGetter.Leases(namespace), key: a.key, value: a.value}
}

// annotatedLease is annotatedLeases for one namespace.
type annotatedLease struct {
	coordinationv1client.LeaseInterface
	key, value string
}

func (a annotatedLease) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return a.LeaseInterface.Create(ctx, a.annotate(lease), opts)
}

func (a annotatedLease) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return a.LeaseInterface.Update(ctx, a.annotate(lease), opts)
}

// annotate returns a copy of lease with the annotation set.
func (a annotatedLease) annotate(lease *coordinationv1.Lease) *coordinationv1.Lease {
	out := lease.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[a.key] = a.value
	return out
}
