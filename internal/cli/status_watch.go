package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// watchDebounce is how long --watch waits after a change for more changes
// of the same burst (a controller pass writes several statuses) before it
// renders once.
const watchDebounce = 150 * time.Millisecond

// watchStatus shows the status, then again whenever an object changes,
// until the command's context ends (Ctrl-C). It reads through informers (a
// list, then a watch per kind), never by polling.
func watchStatus(ctx context.Context, cmd *cobra.Command, f *statusFlags, ns string) error {
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	p := startProgress(cmd.ErrOrStderr(), "reading the tagsync objects")
	first, err := collectStatus(ctx, c, ns, statusKinds)
	if err != nil {
		p.stop()
		return err
	}
	if len(first.Forbidden) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "tagsync: not allowed to list %s: left out\n", strings.Join(first.Forbidden, ", "))
	}
	kinds := watchableKinds(first)
	changed := make(chan struct{}, 1)
	reader, err := startInformers(ctx, f, ns, kinds, changed)
	p.stop()
	if err != nil {
		return err
	}
	w := &statusWatcher{out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), f: f}
	for {
		r, err := collectStatus(ctx, reader, ns, kinds)
		if err != nil {
			if isCanceled(ctx, err) {
				return nil
			}
			return err
		}
		r.Absent, r.Forbidden = first.Absent, first.Forbidden
		if err := w.render(r); err != nil {
			return err
		}
		if !waitForChange(ctx, changed) {
			return nil
		}
	}
}

// watchableKinds are the kinds that exist and may be listed.
func watchableKinds(r *statusReport) []statusKind {
	var kinds []statusKind
	for _, k := range statusKinds {
		if !slices.Contains(r.Absent, k.kind) && !slices.Contains(r.Forbidden, k.kind) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// startInformers starts a cache with an informer per kind that signals
// changed on every add, update and delete, and waits for it to sync.
func startInformers(ctx context.Context, f *statusFlags, ns string, kinds []statusKind, changed chan<- struct{}) (cache.Cache, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, err
	}
	opts := cache.Options{Scheme: kubeScheme()}
	if ns != "" {
		opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	cc, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("watching the tagsync objects: %w", err)
	}
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	for _, k := range kinds {
		inf, err := cc.GetInformer(ctx, k.newObject())
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", k.kind, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching %s: %w", k.kind, err)
		}
	}
	go func() { _ = cc.Start(ctx) }()
	if !cc.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watching the tagsync objects: %w", context.Cause(ctx))
	}
	return cc, nil
}

// waitForChange waits for a change, then for the rest of its burst; false
// when the context ended.
func waitForChange(ctx context.Context, changed <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	}
	t := time.NewTimer(watchDebounce)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	select {
	case <-changed:
	default:
	}
	return true
}

// statusWatcher prints successive reports, skipping one that looks the
// same as the last.
type statusWatcher struct {
	out, errOut io.Writer
	f           *statusFlags
	last        []byte
	count       int
}

// render prints r unless it shows what the last report showed: on a
// terminal a fresh screen, otherwise after a separator.
func (w *statusWatcher) render(r *statusReport) error {
	var buf bytes.Buffer
	if err := writeStatus(&buf, io.Discard, w.f, r); err != nil {
		return err
	}
	if r.empty() && w.f.output == outputTable {
		buf.WriteString("No tagsync objects found.\n")
	}
	if bytes.Equal(buf.Bytes(), w.last) {
		return nil
	}
	w.last = bytes.Clone(buf.Bytes())
	w.count++
	if err := w.separate(); err != nil {
		return err
	}
	_, err := w.out.Write(buf.Bytes())
	return err
}

// separate starts a new report: clears a terminal's screen and says when;
// elsewhere a blank line, or "---" between YAML documents.
func (w *statusWatcher) separate() error {
	var err error
	switch {
	case w.f.output == outputTable && isTerminal(w.out):
		_, err = fmt.Fprintf(w.out, clearScreen+"%s  (watching; Ctrl-C to stop)\n\n", w.f.now().Format(time.TimeOnly))
	case w.count == 1:
	case w.f.output == outputYAML:
		_, err = io.WriteString(w.out, "---\n")
	case w.f.output == outputTable:
		_, err = io.WriteString(w.out, "\n")
	}
	return err
}
