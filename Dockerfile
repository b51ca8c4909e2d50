# syntax=docker/dockerfile:1
# The tagsync image for people who build with Docker. `make image` builds the
# same image without a container daemon (hack/tools/release: the release's
# reproducible multi-platform index); a test (test/release) keeps the user,
# entrypoint and command of the two alike.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.2.0 --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) -t tagsync:0.2.0 .

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
ARG SOURCE_DATE_EPOCH=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
# Static (no cgo), without file system paths, stamped with the version,
# commit and commit time as `make build` does. CA roots are linked in
# (golang.org/x/crypto/x509roots/fallback), so the empty base needs no files.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/tagsync/tagsync/internal/version.Version=${VERSION#v} \
        -X github.com/tagsync/tagsync/internal/version.Commit=${COMMIT} \
        -X github.com/tagsync/tagsync/internal/version.Date=$(date -u -d @${SOURCE_DATE_EPOCH} +%Y-%m-%dT%H:%M:%SZ)" \
      -o /out/tagsync ./cmd/tagsync

FROM scratch
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.source="https://github.com/tagsync/tagsync" \
      org.opencontainers.image.title="tagsync" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/tagsync /usr/local/bin/tagsync
ENV PATH=/usr/local/bin
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tagsync"]
CMD ["run"]
