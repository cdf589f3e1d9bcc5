package lockx

import "errors"

var (
	// ErrNotAcquired means another holder kept the lock until the wait
	// budget ran out (Acquire) or at the one attempt (TryAcquire). The
	// servers answered: retrying later can succeed.
	ErrNotAcquired = errors.New("lockx: not acquired")
	// ErrUnavailable means too few servers answered for a quorum (one
	// server: it did not answer) at the last attempt. Whether anyone holds
	// the lock is unknown. It is distinct from ErrNotAcquired so that a
	// caller can tell "busy" from "down".
	ErrUnavailable = errors.New("lockx: too few Redis servers answered for a quorum")
	// ErrLost is the cause of a Lock's context ending while it was held:
	// an extension found the lock gone, or its validity ran out before an
	// extension could prove it still held. Work done under it must not be
	// committed, except through a fenced write.
	ErrLost = errors.New("lockx: lock lost")
	// ErrReleased is the cause of a Lock's context ending by Release.
	ErrReleased = errors.New("lockx: lock released")
)
