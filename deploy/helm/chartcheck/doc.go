// Package chartcheck holds the tests of the Helm chart in ../stampede: they
// render it with the Helm SDK for the default values and the scaled set
// (../values-scaled.yaml), decode every manifest strictly into the
// Kubernetes API types, and check its wiring and its agreement with the
// compose demo. It is a module of its own, so that Helm's and Kubernetes'
// modules stay out of the application's go.mod; it has no code but its
// tests.
package chartcheck
