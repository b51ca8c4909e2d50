package kit

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
)

// AuditObject names obj, of kind, in an audit record.
func AuditObject(kind string, obj client.Object) audit.Object {
	return audit.Object{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Generation: obj.GetGeneration()}
}

// AuditedWrite is every controller's cloud write: writes sent with the
// cloud's one write (cloud.TagWriter), each resource's mutation recorded
// in log as it happens, from record's description of it: a pending record
// just before its first request, its result record as soon as the cloud
// has answered for it. When a record is lost and the audit fails closed,
// the provider sends nothing more (audit.Log.Mutation): the resources not
// sent end with an error wrapping the sink's. done (nil: none) gets each
// result, not the pending reports, as it comes, after its record. It
// returns one result per ID, as WriteTags does.
func AuditedWrite(ctx context.Context, log *audit.Log, now func() time.Time, w cloud.TagWriter, writes []cloud.TagWrite,
	record func(id string) audit.Write, done func(cloud.WriteResult)) []cloud.WriteResult {
	return w.WriteTags(ctx, writes, func(res cloud.WriteResult) error {
		err := log.Mutation(ctx, record(res.ID).Record(now(), res.Pending, res.Err))
		if !res.Pending && done != nil {
			done(res)
		}
		return err
	})
}
