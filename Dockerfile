# lmosnode container image: a static binary on Alpine, run as an
# unprivileged user, the node's home on a volume. docs/deploy.md says how
# to run it; docker-compose.yml runs three nodes.
#
#   docker build -t lmosnode --build-arg VERSION=v1.0.0 .
#   docker run -d --name lmosnode -e LMOS_API_TOKEN=$(openssl rand -hex 32) \
#     -p 4001:4001 -p 4001:4001/udp -p 4002:4002 -p 127.0.0.1:5080:5080 \
#     -v lmosnode:/var/lib/lmosnode lmosnode

# Build stage: the same script the tests run (scripts/build-static.sh).
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN sh scripts/build-static.sh /out/lmosnode "$VERSION"

# Final stage: Alpine for a shell (compose's bootstrap step, debugging);
# the binary needs nothing of it.
FROM alpine:3.22
RUN addgroup -S -g 10001 lmosnode \
 && adduser -S -D -H -u 10001 -G lmosnode -h /var/lib/lmosnode lmosnode \
 && install -d -m 0700 -o lmosnode -g lmosnode /var/lib/lmosnode
COPY --from=build /out/lmosnode /usr/local/bin/lmosnode
USER 10001:10001
# The home is a volume: identity key, config.json, datastore.
# The API listens on every interface of the container so that a published
# port reaches it; a non-loopback API requires a token, so the node refuses
# to start until LMOS_API_TOKEN is set. Commands run inside the container
# (docker exec) find the API through the same LMOS_API and LMOS_API_TOKEN.
# mDNS is off: a container network is not a LAN; peers come from
# LMOS_BOOTSTRAP.
ENV LMOS_HOME=/var/lib/lmosnode \
    LMOS_API=0.0.0.0:5080 \
    LMOS_MDNS=false
VOLUME ["/var/lib/lmosnode"]
# libp2p TCP and QUIC, libp2p WebSocket, HTTP API
EXPOSE 4001/tcp 4001/udp 4002/tcp 5080/tcp
ENTRYPOINT ["lmosnode"]
CMD ["up"]
