//go:build !linux

package testenv

import (
	"errors"
	"syscall"
)

// childAttr: only Linux can tie a child's life to its parent's.
func childAttr() *syscall.SysProcAttr { return nil }

// processStopped is unknown without /proc.
func processStopped(int) (bool, error) { return false, errors.ErrUnsupported }
