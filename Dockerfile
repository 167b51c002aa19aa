# syntax=docker/dockerfile:1
#
# One image for the orchestrator's processes; each container picks its
# command: /usr/local/bin/worker (the default), /usr/local/bin/starter or
# /usr/local/bin/teardown. deploy/ and docker-compose.yaml use it.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ate-orchestrator:$(git describe --tags --always --dirty) .
#
# (`make image` runs that.) VERSION is what the binaries print with --version;
# the build context has no .git (.dockerignore), so it comes as an argument.
#
# The default (last) stage is the production image. The `compose` stage adds
# a tiny HTTP probe for docker-compose.yaml's healthchecks, as the distroless
# image has no shell, curl or wget.
#
# The release image (`make release`, hack/release: built without docker) is
# the one recipe; this file is its docker build for `make image` and compose,
# with the release's facts: base, go build flags, binaries, user, command and
# labels (hack/release/pkg/release; deploy/dockerfile_test.go fails when
# they differ, docs/decisions/0009-tooling-layout.md).

# go.mod's toolchain line (deploy/dockerfile_test.go keeps them equal).
ARG GO_VERSION=1.27.3

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
        -ldflags="-s -w -X ate.dev/orchestrator/internal/version.Version=${VERSION}" -o /out/ \
        ./cmd/worker ./cmd/starter ./cmd/teardown ./hack/compose/httpprobe

FROM gcr.io/distroless/static:nonroot AS runtime
COPY --from=build /out/worker /out/starter /out/teardown /usr/local/bin/
# distroless' nonroot user; Kubernetes' runAsNonRoot needs it numeric.
USER 65532:65532
CMD ["/usr/local/bin/worker"]
ARG VERSION=dev
LABEL org.opencontainers.image.title="ate-orchestrator" \
      org.opencontainers.image.description="WorkerPool SandboxConfig orchestration on Temporal: worker, starter and teardown" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

FROM runtime AS compose
COPY --from=build /out/httpprobe /usr/local/bin/httpprobe

# The default target: the production image, without the probe.
FROM runtime
