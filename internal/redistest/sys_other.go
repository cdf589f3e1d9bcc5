//go:build !linux

package redistest

import (
	"errors"
	"syscall"
)

// ProcAttr: only Linux can tie a child's life to its parent's.
func ProcAttr() *syscall.SysProcAttr { return nil }

// processStopped is unknown without /proc.
func processStopped(int) (bool, error) { return false, errors.ErrUnsupported }
