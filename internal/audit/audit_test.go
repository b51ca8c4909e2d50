package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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
