# One image, two binaries: the operator (`conveyor`) and the worker (`conveyor-worker`).
# Build stage: static binaries, no cgo.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/conveyor . && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/conveyor-worker ./runtime/cmd/conveyor-worker

# Run stage: distroless static, non-root (uid 65532), nothing but the binaries.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/conveyor /out/conveyor-worker /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/conveyor"]
CMD ["operator"]
