// Package redistest starts private redis-server processes for tests, on
// loopback ports of their own, and makes them fail on demand: stop, kill
// (SIGKILL), pause (SIGSTOP), resume, restart empty, snapshot and restart
// from the snapshot.
//
// It travels with cachex and lockx: their tests use it
// and nothing else of this repository, so a copy of the three directories
// runs its tests in any module. It needs redis-server on PATH and depends
// only on the standard library and go-redis.
//
//	srv := redistest.New(t)              // killed when the test ends
//	rdb := redistest.Client(t, srv)
//	key := redistest.Key(t) + "user:1"   // unique to the test and the run
//	redistest.Must(t, srv.Pause())       // SIGSTOP: alive and silent
package redistest
