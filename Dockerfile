# syntax=docker/dockerfile:1
# Multi-stage build: a static responder (and vllm-sim for demos) on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/responder ./cmd/responder \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/vllm-sim ./cmd/vllm-sim \
 && mkdir -p /out/etc && cp config.example.yaml /out/etc/config.yaml

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/responder /usr/local/bin/responder
COPY --from=build /out/vllm-sim /usr/local/bin/vllm-sim
COPY --from=build /out/etc/config.yaml /etc/vllm-responder/config.yaml
USER 65532:65532
EXPOSE 8080
# Nothing is written at run time: the root filesystem can be read-only.
ENTRYPOINT ["/usr/local/bin/responder"]
CMD ["serve", "--config", "/etc/vllm-responder/config.yaml"]
