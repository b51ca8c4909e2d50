//go:build !linux

package testenv

import "os/exec"

// startProcess starts cmd and closes exited once it has exited.
func startProcess(cmd *exec.Cmd, exited chan<- struct{}) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

// killProcess kills cmd.
func killProcess(cmd *exec.Cmd) error {
	return cmd.Process.Kill()
}
