package lockx

import "errors"

var (
	// ErrNotAcquired means the wait budget ran out while others held the
	// lock (or too few servers answered for a quorum).
	ErrNotAcquired = errors.New("lockx: not acquired")
	// ErrLost is the cause of a Lock's context ending while it was held:
	// an extension found the lock gone, or its validity ran out before an
	// extension could prove it still held. Work done under it must not be
	// committed, except through a fenced write.
	ErrLost = errors.New("lockx: lock lost")
	// ErrReleased is the cause of a Lock's context ending by Release.
	ErrReleased = errors.New("lockx: lock released")
)
