// Package testenv gives tests real servers: private Redis processes that a test
// can stop, kill, pause and restart, a real local Redis Cluster, and fresh,
// migrated Postgres databases.
//
// Servers are found in this order:
//
//  1. the environment: REDIS_URL for Redis (shared, so no fault injection) and
//     DATABASE_URL for Postgres (a role that may CREATE DATABASE);
//  2. local binaries: redis-server on PATH; a Postgres answering on
//     127.0.0.1:5432 or /var/run/postgresql as user postgres, else initdb and
//     pg_ctl on PATH (not as root) for a private cluster;
//  3. testcontainers-go, when a Docker engine answers.
//
// When none is found the test fails with a message that says what to install.
// Every entry point skips the test under `go test -short`, and only then.
//
// Every server, client and database a function returns is released by
// tb.Cleanup; tests never stop or drop them by hand. Handles call tb.Fatal on
// failure, so call their methods from the test's own goroutine.
package testenv
