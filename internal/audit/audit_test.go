package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestRecordsAreJSONLines(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf)
	before := "dev"
	r := Record{Time: time.Date(2026, 11, 22, 10, 4, 5, 0, time.UTC), Object: Object{Kind: "AzureMetadata", Namespace: "ns", Name: "a", Generation: 3},
		Cloud: "azure", Resource: "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/disks/d",
		Set: map[string]Change{"env": {Before: &before, After: "prod"}, "team": {After: "a"}}, Deleted: map[string]string{"old": "x"}, Result: ResultOK}
	if err := l.Write(r); err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-11-22T10:04:05Z","object":{"kind":"AzureMetadata","namespace":"ns","name":"a","generation":3},"cloud":"azure",` +
		`"resource":"/subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/disks/d","set":{"env":{"before":"dev","after":"prod"},"team":{"after":"a"}},` +
		`"deleted":{"old":"x"},"result":"ok"}` + "\n"
	if buf.String() != want {
		t.Errorf("line =\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestConcurrentWritesStayWholeLines(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Write(Record{Cloud: "aws", Resource: strings.Repeat("r", 500), Result: ResultOK})
		}()
	}
	wg.Wait()
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d is not a record: %v", n, err)
		}
		n++
	}
	if n != 50 {
		t.Errorf("%d lines, want 50", n)
	}
}

func TestFileSinkRotatesBySize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, FileOptions{MaxSizeMB: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	big := strings.Repeat("v", 200)
	for i := 0; i < 6000; i++ { // ~2.3 MB
		if err := l.Write(Record{Cloud: "azure", Resource: "r", Set: map[string]Change{"k": {After: big}}, Result: ResultOK}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if info.Size() > 1<<20 {
		t.Errorf("active file is %d bytes, want at most 1 MiB", info.Size())
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "audit-*.log"))
	if len(files) == 0 {
		t.Error("no rotated file")
	}
}

func TestOpenRefusesADirectory(t *testing.T) {
	if _, err := Open(t.TempDir()+"/", FileOptions{}); err == nil || !strings.Contains(err.Error(), "--audit-log") {
		t.Errorf("err = %v", err)
	}
}

// chunkyWriter passes each Write on in small pieces, yielding between
// them, as a pipe does with writes larger than its buffer: writers not
// serialised with each other interleave inside lines.
type chunkyWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *chunkyWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), 7)
		c.mu.Lock()
		c.buf.Write(rest[:n])
		c.mu.Unlock()
		rest = rest[n:]
		runtime.Gosched()
	}
	return len(p), nil
}

// TestStderrLogAndAuditLinesStayWhole: the logger and the audit records,
// both on Stderr as `tagsync run` wires them, written concurrently to a
// sink that splits writes, give whole lines only.
func TestStderrLogAndAuditLinesStayWhole(t *testing.T) {
	sink := &chunkyWriter{}
	lw := Stderr.(*LineWriter)
	lw.mu.Lock()
	saved := lw.w
	lw.w = sink
	lw.mu.Unlock()
	t.Cleanup(func() { lw.mu.Lock(); lw.w = saved; lw.mu.Unlock() })

	l, err := Open(SinkStderr, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logger := crzap.New(crzap.WriteTo(Stderr), crzap.JSONEncoder())
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_ = l.Write(Record{Cloud: "azure", Resource: strings.Repeat("r", 300), Result: ResultOK})
		}()
		go func() {
			defer wg.Done()
			logger.Info("a log line", "i", i, "pad", strings.Repeat("p", 300))
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(sink.buf.String(), "\n"), "\n")
	if len(lines) != 80 {
		t.Errorf("%d lines, want 80", len(lines))
	}
	for i, line := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d is not whole: %v: %.120q", i, err, line)
		}
	}
}

// failingWriter fails while fail is set.
type failingWriter struct {
	fail bool
	buf  bytes.Buffer
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("no space left on device")
	}
	return f.buf.Write(p)
}

// TestFailingSinkIsReportedUntilItWorks: a failed write makes Err report
// the sink's error; Probe keeps it while the sink fails and clears it once
// the sink takes writes again, as does a successful write.
func TestFailingSinkIsReportedUntilItWorks(t *testing.T) {
	w := &failingWriter{fail: true}
	l := New(w)
	if l.FailOpen() {
		t.Fatal("a new log fails open")
	}
	if err := l.Write(Record{Result: ResultPending}); err == nil {
		t.Fatal("write to a failing sink succeeded")
	}
	if l.Err() == nil || l.Probe() == nil {
		t.Fatalf("Err = %v, Probe = %v while the sink fails", l.Err(), l.Probe())
	}
	w.fail = false
	if err := l.Probe(); err != nil || l.Err() != nil {
		t.Fatalf("Probe = %v, Err = %v after the sink recovered", err, l.Err())
	}
	w.fail = true
	_ = l.Write(Record{Result: ResultOK})
	w.fail = false
	if err := l.Write(Record{Result: ResultOK}); err != nil || l.Err() != nil {
		t.Fatalf("Write = %v, Err = %v after the sink recovered", err, l.Err())
	}
}

// TestMutationAppliesThePolicy: a record the sink takes lets the mutation
// go on; a lost one is counted, and stops the mutations while the audit
// fails closed, not once it fails open.
func TestMutationAppliesThePolicy(t *testing.T) {
	w := &failingWriter{}
	l := New(w)
	ctx := context.Background()
	lost := testutil.ToFloat64(lostRecords)
	if err := l.Mutation(ctx, Record{Resource: "/r/1", Result: ResultPending}); err != nil || testutil.ToFloat64(lostRecords) != lost {
		t.Fatalf("Mutation = %v with a working sink, lost records %v (was %v)", err, testutil.ToFloat64(lostRecords), lost)
	}
	w.fail = true
	if err := l.Mutation(ctx, Record{Resource: "/r/1", Result: ResultPending}); err == nil || !errors.Is(err, l.Err()) {
		t.Errorf("Mutation = %v with a failing sink under fail-closed, want the sink's error %v", err, l.Err())
	}
	l.SetFailOpen(true)
	if err := l.Mutation(ctx, Record{Resource: "/r/1", Result: ResultOK}); err != nil {
		t.Errorf("Mutation = %v with a failing sink under fail-open, want nil", err)
	}
	if got := testutil.ToFloat64(lostRecords) - lost; got != 2 {
		t.Errorf("%v lost records counted, want 2", got)
	}
	if l.Err() == nil {
		t.Error("Err = nil after a lost record under fail-open: a controller could not report it")
	}
	if n := strings.Count(w.buf.String(), "\n"); n != 1 {
		t.Errorf("%d records in the sink, want the 1 written before it failed", n)
	}
}

// TestReadReturnsTheRecordsBeforeACutLine: what Write wrote reads back
// whole, and a last line cut short by a kill stops the read with an error
// after the records before it.
func TestReadReturnsTheRecordsBeforeACutLine(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf)
	for _, res := range []string{ResultPending, ResultOK} {
		if err := l.Write(Record{Cloud: "azure", Resource: "/r/1", Result: res}); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString(`{"cloud":"azu`)
	recs, err := Read(&buf)
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("Read of a cut line: err = %v, want one naming line 3", err)
	}
	if len(recs) != 2 || recs[0].Result != ResultPending || recs[1].Result != ResultOK || recs[1].Resource != "/r/1" {
		t.Errorf("Read = %+v, want the pending and ok records of /r/1", recs)
	}
}

// notSentError is an error of a request a throttle gate held (as the
// clouds' ThrottledError without an answer says).
type notSentError struct{ sent bool }

func (e notSentError) Error() string { return "throttled" }
func (e notSentError) NotSent() bool { return !e.sent }

func TestRecordResults(t *testing.T) {
	w := Write{Cloud: "aws", Resource: "r"}
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		pending bool
		err     error
		want    string
	}{
		{"pending", true, nil, ResultPending},
		{"answered", false, nil, ResultOK},
		{"failed", false, errors.New("denied"), ResultError},
		{"throttled after it was sent", false, fmt.Errorf("write: %w", notSentError{sent: true}), ResultError},
		{"held by a gate", false, fmt.Errorf("write: %w", notSentError{}), ResultNotSent},
	} {
		if got := w.Record(at, c.pending, c.err).Result; got != c.want {
			t.Errorf("%s: result %q, want %q", c.name, got, c.want)
		}
	}
}
