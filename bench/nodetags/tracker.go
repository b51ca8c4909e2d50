package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// tracker is the harness's watch of every Node's metadata (labels under
// labelPrefix or awsLabelPrefix, and resourceVersion): it sees when labels arrive and counts
// Node writes (every update with a new resourceVersion is one).
type tracker struct {
	*benchkit.Watch
	expect map[string]map[string]string // node → labels it must carry
}

// startTracker starts the harness's watch of the Nodes.
func (b *bench) startTracker(ctx context.Context) (*tracker, error) {
	w, err := benchkit.StartWatch(ctx, b.meta, benchkit.Nodes, "", func(label string) bool {
		return strings.HasPrefix(label, labelPrefix) || strings.HasPrefix(label, awsLabelPrefix)
	})
	if err != nil {
		return nil, err
	}
	return &tracker{Watch: w}, nil
}

// expectLabels sets the labels each node must carry; waitExpected then
// waits until all do.
func (t *tracker) expectLabels(expect map[string]map[string]string) { t.expect = expect }

// waitExpected waits until every expected node carries its labels and
// returns when the last one was seen doing so.
func (t *tracker) waitExpected(ctx context.Context, what string, timeout time.Duration) (time.Time, error) {
	var last time.Time
	deadline := time.Now().Add(timeout)
	for node, want := range t.expect {
		at, err := t.Await(ctx, "/"+node, func(s benchkit.ObjState) bool { return carries(s.Labels, want) }, time.Until(deadline))
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", what, err)
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// carries reports whether have holds every label of want.
func carries(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// writesSeen is the number of Node writes since ResetWrites.
func (t *tracker) writesSeen() int {
	w, _ := t.WritesSeen()
	return w["update"]
}

// lastWrite is when a Node was last written.
func (t *tracker) lastWrite() time.Time {
	_, at := t.WritesSeen()
	return at
}
