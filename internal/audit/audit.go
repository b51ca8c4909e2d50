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
// result is "ok" or "error" (then error says why). Tag values are what the
// user wrote into a spec; no credential ever reaches a record.
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
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
	ResultOK    = "ok"
	ResultError = "error"
)

// Record is one cloud mutation of one resource.
type Record struct {
	// Time is when the mutation ended.
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
	// Result is ResultOK or ResultError.
	Result string `json:"result"`
	// Error says why the mutation failed.
	Error string `json:"error,omitempty"`
}

// Log writes records as JSON lines. It is safe for concurrent use; the zero
// value is not usable (see Open, New and Discard).
type Log struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
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
		return New(os.Stderr), nil
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
	return &Log{w: lj, closer: lj}, nil
}

// New returns a Log writing to w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Discard returns a Log that writes nothing.
func Discard() *Log { return New(io.Discard) }

// Write appends one record as one line.
func (l *Log) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("audit: write record: %w", err)
	}
	return nil
}

// Close closes a file sink; other sinks are left open.
func (l *Log) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}
