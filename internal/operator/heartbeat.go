package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/tags"
)

// HeartbeatTag is the tag the heartbeat writes (the time of the write).
const HeartbeatTag = cloud.HeartbeatTag

// DefaultHeartbeatInterval is how often the heartbeat writes.
const DefaultHeartbeatInterval = 5 * time.Minute

// heartbeat writes HeartbeatTag on each of its resources every interval,
// as the leader: each write's echo is awaited like any own write's
// (cloud.OwnWrites), so a stream whose events stop arriving is judged
// silent even on an estate where nothing else changes — the deleted event
// subscription or rule, the filter that leaves out the type, whatever the
// public-address probe cannot see. It is opt-in (--events-heartbeat): it
// writes a tag on resources the user chose.
type heartbeat struct {
	resources []string
	every     time.Duration
	providers cloud.Providers
	log       logr.Logger
}

// heartbeatWriter names the heartbeat's writes for their echoes.
const heartbeatWriter = "heartbeat"

// NeedLeaderElection is true: one replica writes.
func (h *heartbeat) NeedLeaderElection() bool { return true }

// Start writes every interval until ctx ends.
func (h *heartbeat) Start(ctx context.Context) error {
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	for {
		h.beat(ctx, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// beat writes the tag on every resource, by cloud.
func (h *heartbeat) beat(ctx context.Context, now time.Time) {
	byCloud := map[string][]string{}
	for _, id := range h.resources {
		byCloud[cloudOf(id)] = append(byCloud[cloudOf(id)], id)
	}
	for name, ids := range byCloud {
		p, err := h.providers.ClassifiedProvider(name)
		if err != nil {
			h.log.Error(err, "no provider for the heartbeat's resources", "resources", ids)
			continue
		}
		patch := tags.Patch{Set: tags.Set{HeartbeatTag: now.UTC().Format(time.RFC3339)}}
		for _, id := range ids {
			wctx := cloud.WithWriter(ctx, cloud.Writer{Controller: heartbeatWriter, Object: id})
			for _, r := range p.WriteTags(wctx, []cloud.TagWrite{{IDs: []string{id}, Patch: patch}}, nil) {
				if r.Err != nil {
					h.log.Error(r.Err, "writing the heartbeat tag", "resource", r.ID)
				}
			}
		}
	}
}

// cloudOf is the cloud a resource ID names ("" for none: validHeartbeat
// refused it).
func cloudOf(id string) string {
	if k, err := clouds.Of(id); err == nil {
		return k.Name
	}
	return ""
}

// validHeartbeat checks the heartbeat's resources.
func validHeartbeat(resources []string) error {
	for _, id := range resources {
		if _, err := clouds.Of(id); err != nil {
			return fmt.Errorf("--events-heartbeat: %w", err)
		}
	}
	return nil
}
