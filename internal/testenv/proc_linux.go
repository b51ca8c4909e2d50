package testenv

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
)

// startProcess starts cmd in a process group of its own, which the kernel
// kills when the test process dies (even by a panic or a `go test -timeout`,
// when no cleanup runs), and closes exited once it has exited.
//
// The kernel sends that signal when the thread that started the child ends,
// not the process, so the start happens on a goroutine locked to its thread
// until the child has exited.
func startProcess(cmd *exec.Cmd, exited chan<- struct{}) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	return <-started
}

// killProcess kills cmd's whole process group (a launcher script and what it
// started). A group already gone is no error.
func killProcess(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
