// Package audit writes one JSON line per cloud mutation tagsync makes: when,
// which object asked for it (and at which generation), on which cloud and
// resource, which tags were set (with their values before and after) and
// deleted (with their values before), and how it ended. `tagsync run
// --audit-log` chooses the sink: standard error, or a file rotated by size.
//
// A record, one line in the log (wrapped here):
//
//	{"time":"2026-11-22T10:04:05.123Z","object":{"kind":"AzureMetadata","namespace":"platform",
//	 "name":"cluster-tags","generation":3},"cloud":"azure","resource":"/subscriptions/…/disks/os-0",
//	 "set":{"env":{"before":"dev","after":"prod"},"team":{"after":"a"}},"deleted":{"old":"x"},
//	 "result":"ok"}
//
// result is "ok", "error" (then error says why) or "not-sent" (a throttle
// gate held the request; nothing changed). Tag values are what the
// user wrote into a spec; no credential ever reaches a record.
//
// Records are written as mutations happen, not after a batch: a resource
// gets a record with result "pending" just before its first cloud request
// is sent (the intent), and a second record with its result as soon as the
// cloud has answered for it, each with its own time. A process killed
// between the two leaves the pending record alone: the mutation may or may
// not have been made, and the resource's tags in the cloud say which. So
// every tag tagsync changed has at least one line, even when the process
// died while the cloud accepted the request.
//
// The log applies the audit policy itself (Log.Mutation), the same for
// every controller that mutates the cloud: it fails closed by default: once
// a record cannot be written (disk full, file made read-only, a broken
// pipe), no further mutation is started until one can, because the pending
// record comes first and a controller stops its writes when Mutation
// fails. With SetFailOpen(true) (`tagsync run --audit-fail-open`) mutations
// go on. Either way a lost record is counted
// (tagsync_metadata_audit_errors_total) and logged.
//
// On standard error the records share Stderr with the logger: one
// writer whose every Write is whole under one lock, so a record and a log
// line never interleave.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/natefinch/lumberjack.v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/internal/tags"
)

// Object names the Kubernetes object that asked for a mutation.
type Object struct {
	// Kind is the object's kind, e.g. AzureMetadata.
	Kind string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// Generation is metadata.generation of the spec that asked.
	Generation int64 `json:"generation"`
}

// Change is one tag set by a mutation.
type Change struct {
	// Before is the value the tag had; nil when it was absent.
	Before *string `json:"before,omitempty"`
	// After is the value written.
	After string `json:"after"`
}

// Results of a mutation.
const (
	// ResultPending is the record written before the mutation is sent.
	ResultPending = "pending"
	ResultOK      = "ok"
	ResultError   = "error"
	// ResultNotSent is a mutation a throttle gate held: nothing was sent,
	// the resource is unchanged, and a later pass sends it again.
	ResultNotSent = "not-sent"
)

// Record is one cloud mutation of one resource.
type Record struct {
	// Time is when the mutation ended (when it was about to be sent, for a
	// pending record).
	Time time.Time `json:"time"`
	// Object asked for it.
	Object Object `json:"object"`
	// Cloud is the provider's name ("azure", "aws").
	Cloud string `json:"cloud"`
	// Resource is the cloud's ID of the resource.
	Resource string `json:"resource"`
	// Set are the tags set, by name.
	Set map[string]Change `json:"set,omitempty"`
	// Deleted are the tags deleted, by name, with their values before.
	Deleted map[string]string `json:"deleted,omitempty"`
	// Result is ResultPending, ResultOK, ResultError or ResultNotSent.
	Result string `json:"result"`
	// Error says why the mutation failed.
	Error string `json:"error,omitempty"`
}

// Describe fills the record's Set and Deleted with what patch does to a
// resource that carried before (names compared as nc does).
func (r *Record) Describe(nc tags.NameCase, before tags.Set, patch tags.Patch) {
	for _, n := range patch.Set.Names() {
		if r.Set == nil {
			r.Set = map[string]Change{}
		}
		c := Change{After: patch.Set[n]}
		if v, ok := before.Get(nc, n); ok {
			c.Before = &v
		}
		r.Set[n] = c
	}
	for _, n := range patch.Delete {
		if r.Deleted == nil {
			r.Deleted = map[string]string{}
		}
		r.Deleted[n], _ = before.Get(nc, n)
	}
}

// Log writes records as JSON lines. It is safe for concurrent use; the zero
// value is not usable (see Open, New and Discard).
type Log struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	path   string // of a file sink
	// failOpen lets mutations go on while records cannot be written.
	failOpen atomic.Bool
	// failing is the error of the last write, nil once one succeeded.
	failing error
}

// Stderr is the process's standard error for the logger and the audit
// records alike: each Write is whole under one lock, so their lines never
// interleave. Give it to the logger (zap.Options.DestWriter).
var Stderr io.Writer = &LineWriter{w: os.Stderr}

// LineWriter serialises the Writes of several writers to one sink, each
// Write whole.
type LineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLineWriter returns a LineWriter writing to w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Write writes p to the sink under the lock.
func (lw *LineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// Sinks accepted by Open besides a file path.
const (
	// SinkStderr writes to standard error.
	SinkStderr = "stderr"
	// SinkNone writes nowhere.
	SinkNone = "none"
)

// FileOptions tune a file sink.
type FileOptions struct {
	// MaxSizeMB is the size at which the file is rotated (default 100).
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept (default 5).
	MaxBackups int
}

// Open returns the Log for a sink: "stderr" (also ""), "none", or a file
// path (created with mode 0600 if missing, appended to, rotated by size).
func Open(sink string, o FileOptions) (*Log, error) {
	switch sink {
	case "", SinkStderr:
		return New(Stderr), nil
	case SinkNone:
		return Discard(), nil
	}
	if strings.HasSuffix(sink, "/") {
		return nil, fmt.Errorf("--audit-log %q is a directory; give a file path, %q or %q", sink, SinkStderr, SinkNone)
	}
	if o.MaxSizeMB <= 0 {
		o.MaxSizeMB = 100
	}
	if o.MaxBackups <= 0 {
		o.MaxBackups = 5
	}
	f, err := os.OpenFile(sink, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	_ = f.Close()
	lj := &lumberjack.Logger{Filename: sink, MaxSize: o.MaxSizeMB, MaxBackups: o.MaxBackups}
	return &Log{w: lj, closer: lj, path: sink}, nil
}

// New returns a Log writing to w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Discard returns a Log that writes nothing.
func Discard() *Log { return New(io.Discard) }

// Write appends one record as one line. After a failed write the log is
// failing (see Err) until a write or Probe succeeds.
func (l *Log) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err != nil {
		l.failing = fmt.Errorf("audit: write record: %w", err)
		return l.failing
	}
	l.failing = nil
	return nil
}

// Err returns the error of the last write when it failed, else nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing
}

// Probe checks, when the log is failing, whether the sink takes records
// again, without writing one: a file sink must open for appending, a
// writer must take an empty write. It returns the log's error after the
// check (nil: records can be written).
func (l *Log) Probe() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing == nil {
		return nil
	}
	var err error
	if l.path != "" {
		var f *os.File
		if f, err = os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0); err == nil {
			err = f.Close()
		}
	} else {
		_, err = l.w.Write(nil)
	}
	if err != nil {
		l.failing = fmt.Errorf("audit: sink still failing: %w", err)
		return l.failing
	}
	l.failing = nil
	return nil
}

// lostRecords counts the records Mutation could not write, whichever
// controller made the mutation. It keeps the name the metadata controller
// first gave it, which alerts and dashboards use.
var lostRecords = func() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tagsync", Subsystem: "metadata", Name: "audit_errors_total",
		Help: "Audit records that could not be written."})
	crmetrics.Registry.MustRegister(c)
	return c
}()

// Mutation writes the record of a cloud mutation under the audit policy
// and says whether mutations may go on: nil when the record was written,
// or was lost while the audit fails open; the sink's error when it was
// lost and the audit fails closed, and then the caller starts no further
// mutation (for a pending record: not this one). A lost record is counted
// and logged on ctx's logger either way; Err and Probe tell afterwards
// whether the log is failing.
func (l *Log) Mutation(ctx context.Context, r Record) error {
	err := l.Write(r)
	if err == nil {
		return nil
	}
	lostRecords.Inc()
	ctrllog.FromContext(ctx).Error(err, "audit record not written", "resource", r.Resource, "failOpen", l.FailOpen())
	if l.FailOpen() {
		return nil
	}
	return err
}

// SetFailOpen chooses what a lost record means: false (the default) stops
// mutations until records can be written again; true lets them go on.
func (l *Log) SetFailOpen(open bool) { l.failOpen.Store(open) }

// FailOpen reports whether mutations go on while records cannot be
// written.
func (l *Log) FailOpen() bool { return l.failOpen.Load() }

// Close closes a file sink; other sinks are left open.
func (l *Log) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// Read parses an audit log: one record per line, in order. A line that is
// not a record (a kill may cut the last line short) stops the read with an
// error naming it; the records before it are returned.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("audit line %d %q: %w", n, sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Write is one cloud mutation as a controller makes it: who asked, where,
// and what the patch does to what the resource carried. Every controller
// builds its records from one (Record), so that they read alike.
type Write struct {
	// Object asked for it.
	Object Object
	// Cloud is the provider's name; Resource the cloud's ID.
	Cloud, Resource string
	// NameCase is how the cloud compares tag names.
	NameCase tags.NameCase
	// Before are the resource's tags before the patch.
	Before tags.Set
	// Patch is the mutation.
	Patch tags.Patch
}

// Record is w's record at at: ResultPending when pending (about to be
// sent), else ResultNotSent when a throttle gate held it, ResultError with
// any other err, or ResultOK when err is nil.
func (w Write) Record(at time.Time, pending bool, err error) Record {
	rec := Record{Time: at.UTC(), Object: w.Object, Cloud: w.Cloud, Resource: w.Resource, Result: ResultOK}
	rec.Describe(w.NameCase, w.Before, w.Patch)
	switch {
	case pending:
		rec.Result = ResultPending
	case notSent(err):
		rec.Result, rec.Error = ResultNotSent, err.Error()
	case err != nil:
		rec.Result, rec.Error = ResultError, err.Error()
	}
	return rec
}

// notSent reports whether err says its request was never sent (a cloud's
// throttle gate held it: the error has NotSent() true).
func notSent(err error) bool {
	var ns interface{ NotSent() bool }
	return errors.As(err, &ns) && ns.NotSent()
}
