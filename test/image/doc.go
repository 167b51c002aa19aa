// Package image runs the orchestrator's release image for real: it loads
// the OCI archive `make release` writes (or a stand-in of the same shape
// until it exists) into a private podman store, runs each binary's
// --version from it with a read-only root as the image's user, and runs the
// worker and the starter from it, on the host network, against the local
// stack the e2e tests use (internal/testenv) through a switch and a release.
//
// README.md beside this file says how the image is run and why each
// podman flag is there.
package image
