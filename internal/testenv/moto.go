package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// The account, region and credentials of every Moto. moto accepts any
// credentials; these are the ones its documentation uses.
const (
	// MotoRegion is the region Moto.Config names.
	MotoRegion = "us-east-1"
	// MotoAccountID is moto's default account: the one in every ARN it returns.
	MotoAccountID = "123456789012"
	// MotoAccessKeyID is the access key of Moto.Config's static credentials.
	MotoAccessKeyID = "testing"
	// MotoSecretAccessKey is the secret key of Moto.Config's static credentials.
	MotoSecretAccessKey = "testing"
)

// motoStartTimeout bounds how long moto_server may take to import itself and
// answer (a couple of seconds when warm, more on a loaded 2-core machine).
const motoStartTimeout = 90 * time.Second

// Moto is a running moto_server: a local fake of the AWS APIs (EC2, the
// Resource Groups Tagging API and many more) on a loopback port, for tests of
// code that calls AWS through the AWS SDK for Go v2.
type Moto struct {
	// URL is the server's endpoint, http://127.0.0.1:PORT: moto behind
	// the AWS limits moto does not enforce (motorules.go), so that a call
	// AWS would refuse fails here too.
	URL string
	// Direct is moto_server's own endpoint, without those limits. Tests
	// and benchmarks use URL; Direct is for showing what moto alone
	// accepts.
	Direct string
	// Rules are the AWS limits in front of moto at URL; tests may tune
	// the configurable ones (EC2 throttling, the tagging API's indexing
	// delay).
	Rules *AWSRules
	// Config reaches the server with the AWS SDK for Go v2: region
	// MotoRegion, static test credentials, BaseEndpoint URL. It is built
	// from nothing else (no AWS_* variable, no ~/.aws file), so a client
	// made from it with ec2.NewFromConfig and the like talks to this server
	// only.
	Config aws.Config

	cmd       *exec.Cmd
	stopRules func()
	out       *SyncBuffer
	exited    chan struct{} // closed when the process has exited
	stopOnce  sync.Once
	stopErr   error
}

// StartMoto starts a moto_server for the test on a free loopback port, waits
// until it answers and stops it when the test ends. A missing moto_server
// fails the test (never skips it), saying to run `make tools`.
func StartMoto(t testing.TB) *Moto {
	t.Helper()
	m, err := NewMoto()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("moto_server's log (the end):\n%s", tail(m.Output(), 4096))
		}
		if err := m.Stop(); err != nil {
			t.Errorf("stopping moto_server: %v", err)
		}
	})
	return m
}

// NewMoto starts a moto_server on a free loopback port and waits until it
// answers; the caller must Stop it. Use it from TestMain to share one server
// across a package's tests (Reset between tests that must not see each
// other's resources).
func NewMoto() (*Moto, error) {
	path, err := MotoServerPath()
	if err != nil {
		return nil, err
	}
	out := &SyncBuffer{}
	// Port 0: the kernel picks a free port as moto binds, and moto prints
	// the address it got, so no other process can take the port between a
	// check and the bind.
	cmd := exec.Command(path, "-H", "127.0.0.1", "-p", "0")
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	m := &Moto{cmd: cmd, out: out, exited: make(chan struct{})}
	if err := startProcess(cmd, m.exited); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	if err := m.await(path); err != nil {
		_ = m.Stop()
		return nil, err
	}
	m.Direct = m.URL
	if m.Rules, m.URL, m.stopRules, err = startAWSRules(m.Direct); err != nil {
		_ = m.Stop()
		return nil, fmt.Errorf("starting the AWS limits in front of moto_server: %w", err)
	}
	m.Config = motoConfig(m.URL)
	return m, nil
}

// motoURLPattern matches the line in which moto_server (werkzeug) says where it
// listens.
var motoURLPattern = regexp.MustCompile(`Running on (http://127\.0\.0\.1:([0-9]+))`)

// await waits until moto_server has printed its address and answers there.
func (m *Moto) await(path string) error {
	deadline := time.NewTimer(motoStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	httpc := &http.Client{Timeout: 5 * time.Second}
	last := "it has printed no address yet"
	for {
		if m.URL == "" {
			if match := motoURLPattern.FindStringSubmatch(m.out.String()); match != nil && match[2] != "0" {
				m.URL = match[1]
				last = "it has not answered at " + m.URL + " yet"
			}
		}
		if m.URL != "" {
			err := motoGet(httpc, m.URL+"/moto-api/data.json")
			if err == nil {
				return nil
			}
			last = err.Error()
		}
		select {
		case <-m.exited:
			return fmt.Errorf("%s exited before it answered (%v); its output:\n%s", path, m.cmd.ProcessState, tail(m.out.String(), 4096))
		case <-deadline.C:
			return fmt.Errorf("%s did not answer within %s: %s; its output:\n%s", path, motoStartTimeout, last, tail(m.out.String(), 4096))
		case <-tick.C:
		}
	}
}

// motoGet GETs url and wants 200 OK.
func motoGet(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// motoConfig builds an aws.Config for a moto at url from nothing but url and
// the test credentials.
func motoConfig(url string) aws.Config {
	return aws.Config{
		Region:       MotoRegion,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(MotoAccessKeyID, MotoSecretAccessKey, "")),
		BaseEndpoint: aws.String(url),
	}
}

// LoadOptions returns options for config.LoadDefaultConfig that aim at this
// server as Config does, for code under test that loads its own
// configuration: region MotoRegion, the static test credentials, BaseEndpoint
// URL, no shared config or credentials file, no instance metadata. Pass them
// after any others so they win. AWS_* variables still apply where these say
// nothing (AWS_ENDPOINT_URL_<SERVICE> would redirect that service); Config
// reads none.
func (m *Moto) LoadOptions() []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithRegion(MotoRegion),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(MotoAccessKeyID, MotoSecretAccessKey, "")),
		config.WithBaseEndpoint(m.URL),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
	}
}

// Reset makes moto forget every resource in every account and region, so
// tests sharing one server each start from nothing.
func (m *Moto) Reset() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/moto-api/reset", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("resetting moto at %s: %w", m.URL, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto at %s: %s", m.URL, resp.Status)
	}
	return nil
}

// Output returns what moto_server has printed so far (its request log).
func (m *Moto) Output() string { return m.out.String() }

// Stop kills moto_server and waits until it has exited. It may be called
// more than once.
func (m *Moto) Stop() error {
	m.stopOnce.Do(func() {
		if m.stopRules != nil {
			m.stopRules()
		}
		select {
		case <-m.exited:
			return // it died by itself; the caller has seen why or will in Output
		default:
		}
		if err := killProcess(m.cmd); err != nil && !errors.Is(err, os.ErrProcessDone) {
			m.stopErr = fmt.Errorf("killing moto_server (pid %d): %w", m.cmd.Process.Pid, err)
			return
		}
		select {
		case <-m.exited:
		case <-time.After(time.Minute):
			m.stopErr = fmt.Errorf("moto_server (pid %d) has not exited a minute after SIGKILL", m.cmd.Process.Pid)
		}
	})
	return m.stopErr
}

// MotoServerPath returns the moto_server to run: bin/moto/bin/moto_server in
// the repository (what `make moto` installs, at the pinned version) when it
// is there, otherwise the first moto_server on PATH. It errors, saying to run
// `make tools`, when there is neither.
func MotoServerPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return findMotoServer(root, exec.LookPath)
}

// findMotoServer is MotoServerPath with the repository root and the PATH
// look-up given.
func findMotoServer(root string, lookPath func(string) (string, error)) (string, error) {
	local := filepath.Join(root, "bin", "moto", "bin", "moto_server")
	if fi, err := os.Stat(local); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return local, nil
	}
	if p, err := lookPath("moto_server"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("moto_server is missing: neither %s nor a moto_server on PATH exists; "+
		"run `make tools` (or just `make moto`, which installs the pinned moto[server] into bin/moto "+
		"with Python 3's venv and pip) first", local)
}

// tail returns the last n bytes of s, marking a cut.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[...]\n" + s[len(s)-n:]
}
