// Package scalebench measures the choices docs/scaling.md discusses, on
// private Redis servers: what a larger Redlock quorum costs each lock, and
// what moving the caches onto a Redis Cluster costs a batch read.
package scalebench
