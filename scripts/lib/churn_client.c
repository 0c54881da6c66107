/*
 * A light connect/disconnect driver for scripts/bench-connect (BENCH_CONNECT_DRIVER=c): one epoll loop, no runtime, so
 * that the node's own ceiling shows on a small machine where statusload's cost per cycle takes a third of what is left.
 * Compiled at run time:  gcc -O2 -o DIR/churn_client scripts/lib/churn_client.c
 *
 * usage: churn_client PORT TOKENFILE NDEV RATE SECONDS JSONFILE
 *   device i is user u<i> (line i of TOKENFILE is its token), deviceId "c", platform web.
 *   1. connects the NDEV devices, at most 200 upgrades in flight (a 503 is tried again 100 ms later);
 *   2. prints "[c] churn", then for SECONDS drops RATE random open devices a second: a close frame (1000), the
 *      server's close or EOF, and a reconnect at once; a reconnect's time runs from its start to its welcome frame;
 *   3. prints "[c] draining", waits 1 s, and up to 5 s for the reconnects in flight, writes JSONFILE in the shape of
 *      statusload's summary: {"churn": {"connectsPerSecond", "failures", "connectTimeMs": {"p50", "p99"}}}.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { IDLE, CONNECTING, HANDSHAKE, WELCOME, OPEN, CLOSING };
#define BUFCAP 16384
#define INFLIGHT 200

typedef struct {
    int fd, state, len, churned;
    long long started;
    char *token;
    unsigned char buf[BUFCAP];
} conn_t;

static conn_t *conns;
static int ndev, port, ep, inflight, opened;
static int *open_set, *open_pos, nopen;
static int *retry_q, retry_head, retry_tail;
static long long *retry_at;
static double *times;
static long long ntimes, maxtimes, failures, drops_issued;
static int churning;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void open_add(int i) {
    open_pos[i] = nopen;
    open_set[nopen++] = i;
}

static void open_remove(int i) {
    int p = open_pos[i], last = open_set[--nopen];
    open_set[p] = last;
    open_pos[last] = p;
    open_pos[i] = -1;
}

static void start_connect(int i);

static void retry_later(int i) {
    retry_q[retry_tail % ndev] = i;
    retry_at[retry_tail % ndev] = now_ns() + 100000000LL;
    retry_tail++;
}

static void finish(int i, int failed) {
    conn_t *c = &conns[i];
    if (c->state == CONNECTING || c->state == HANDSHAKE || c->state == WELCOME) inflight--;
    if (open_pos[i] >= 0) open_remove(i);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = IDLE;
    c->len = 0;
    if (failed) {
        failures++;
        retry_later(i);
    }
}

static void start_connect(int i) {
    conn_t *c = &conns[i];
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        failures++;
        retry_later(i);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->state = CONNECTING;
    c->len = 0;
    c->started = now_ns();
    inflight++;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) finish(i, 1);
}

static void send_upgrade(int i) {
    conn_t *c = &conns[i];
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "GET /v1/connect?deviceId=c&platform=web HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                     "Authorization: Bearer %s\r\n\r\n",
                     c->token);
    if (write(c->fd, req, n) != n) {
        finish(i, 1);
        return;
    }
    c->state = HANDSHAKE;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* a masked client frame (RFC 6455 §5.2) with a payload of at most 125 bytes */
static void send_frame(conn_t *c, int opcode, const unsigned char *payload, int n) {
    static const unsigned char mask[4] = {0x5a, 0x17, 0xc3, 0x9e};
    unsigned char f[6 + 125];
    f[0] = 0x80 | opcode;
    f[1] = 0x80 | n;
    memcpy(f + 2, mask, 4);
    for (int k = 0; k < n; k++) f[6 + k] = payload[k] ^ mask[k & 3];
    if (write(c->fd, f, 6 + n) < 0) { /* the read side sees the end */
    }
}

static void drop(int i) {
    static const unsigned char normal[2] = {0x03, 0xe8};
    conn_t *c = &conns[i];
    open_remove(i);
    c->churned = 1;
    c->state = CLOSING;
    send_frame(c, 8, normal, 2);
}

/* consumes whole server frames from the buffer; returns 0, or -1 when the connection is to end */
static int frames(int i) {
    conn_t *c = &conns[i];
    int at = 0;
    while (c->len - at >= 2) {
        unsigned char *p = c->buf + at;
        int opcode = p[0] & 0x0f;
        long long n = p[1] & 0x7f;
        int h = 2;
        if (n == 126) {
            if (c->len - at < 4) break;
            n = (p[2] << 8) | p[3];
            h = 4;
        } else if (n == 127) {
            if (c->len - at < 10) break;
            n = 0;
            for (int k = 0; k < 8; k++) n = (n << 8) | p[2 + k];
            h = 10;
        }
        if (h + n > BUFCAP) return -1;
        if (c->len - at < h + n) break;
        if (opcode == 8) return -1;
        if (opcode == 9) send_frame(c, 10, p + h, n > 125 ? 125 : (int)n);
        if (opcode == 1 && c->state == WELCOME) {
            inflight--;
            c->state = OPEN;
            opened++;
            open_add(i);
            if (c->churned && churning && ntimes < maxtimes) times[ntimes++] = (now_ns() - c->started) / 1e6;
        }
        at += h + (int)n;
    }
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
    return 0;
}

static void readable(int i) {
    conn_t *c = &conns[i];
    for (;;) {
        ssize_t r = read(c->fd, c->buf + c->len, BUFCAP - c->len);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            int was = c->state;
            finish(i, was != CLOSING && was != OPEN);
            if (was == CLOSING || was == OPEN) start_connect(i);
            return;
        }
        if (r < 0) return;
        c->len += r;
        if (c->state == HANDSHAKE) {
            unsigned char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
            if (!end) {
                if (c->len == BUFCAP) finish(i, 1);
                continue;
            }
            if (memcmp(c->buf, "HTTP/1.1 101", 12) != 0) {
                finish(i, 1);
                return;
            }
            int head = (int)(end - c->buf) + 4;
            memmove(c->buf, c->buf + head, c->len - head);
            c->len -= head;
            c->state = WELCOME;
        }
        if (c->state >= WELCOME && frames(i) < 0) {
            int was = c->state;
            finish(i, was != CLOSING && was != OPEN);
            if (was == CLOSING || was == OPEN) start_connect(i);
            return;
        }
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: churn_client PORT TOKENFILE NDEV RATE SECONDS JSONFILE\n");
        return 2;
    }
    port = atoi(argv[1]);
    ndev = atoi(argv[3]);
    double rate = atof(argv[4]), seconds = atof(argv[5]);
    FILE *tf = fopen(argv[2], "r");
    if (!tf) {
        perror(argv[2]);
        return 1;
    }
    conns = calloc(ndev, sizeof *conns);
    open_set = calloc(ndev, sizeof *open_set);
    open_pos = calloc(ndev, sizeof *open_pos);
    retry_q = calloc(ndev, sizeof *retry_q);
    retry_at = calloc(ndev, sizeof *retry_at);
    maxtimes = (long long)(rate * seconds * 1.5) + 1000;
    times = calloc(maxtimes, sizeof *times);
    char line[4096];
    for (int i = 0; i < ndev; i++) {
        if (!fgets(line, sizeof line, tf)) {
            fprintf(stderr, "TOKENFILE has fewer than %d lines\n", ndev);
            return 1;
        }
        line[strcspn(line, "\r\n")] = 0;
        conns[i].token = strdup(line);
        conns[i].fd = -1;
        open_pos[i] = -1;
    }
    fclose(tf);
    ep = epoll_create1(0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec its = {.it_interval = {0, 1000000}, .it_value = {0, 1000000}};
    timerfd_settime(tfd, 0, &its, NULL);
    struct epoll_event tev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);

    int next = 0;
    long long t0 = now_ns(), churn_start = 0, churn_end = 0, deadline = t0 + 180000000000LL;
    struct epoll_event events[256];
    for (;;) {
        long long now = now_ns();
        while (retry_head < retry_tail && retry_at[retry_head % ndev] <= now) start_connect(retry_q[retry_head++ % ndev]);
        while (!churning && next < ndev && inflight < INFLIGHT) start_connect(next++);
        if (!churning && !churn_end && (opened >= ndev || now > deadline)) {
            churning = 1;
            churn_start = now;
            fprintf(stderr, "[c] setup: %d of %d devices open (%.1f s)\n", nopen, ndev, (now - t0) / 1e9);
            printf("[c] churn %.0f cycles/s for %.0f s\n", rate, seconds);
            fflush(stdout);
        }
        if (churning) {
            double elapsed = (now - churn_start) / 1e9;
            if (elapsed >= seconds) {
                churning = 0;
                churn_end = now;
                printf("[c] draining %d devices\n", nopen);
                fflush(stdout);
            } else {
                long long due = (long long)(elapsed * rate);
                while (drops_issued < due && nopen > 0) {
                    drop(open_set[(unsigned)rand() % nopen]);
                    drops_issued++;
                }
            }
        }
        /* a second at least after the draining line, so that whoever times the churn sees it */
        if (churn_end && now - churn_end > 1000000000LL && (inflight == 0 || now - churn_end > 5000000000LL)) break;
        int n = epoll_wait(ep, events, 256, 10);
        for (int k = 0; k < n; k++) {
            uint32_t i = events[k].data.u32;
            if (i == UINT32_MAX) {
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) < 0) { /* nothing due */
                }
                continue;
            }
            conn_t *c = &conns[i];
            if (c->fd < 0) continue;
            if (c->state == CONNECTING) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err) {
                    finish(i, 1);
                    continue;
                }
                send_upgrade(i);
                continue;
            }
            if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(i);
        }
    }
    double window = (churn_end - churn_start) / 1e9;
    qsort(times, ntimes, sizeof *times, compare);
    double p50 = ntimes ? times[ntimes / 2] : 0, p99 = ntimes ? times[(long long)(ntimes * 0.99)] : 0;
    FILE *out = fopen(argv[6], "w");
    if (!out) {
        perror(argv[6]);
        return 1;
    }
    fprintf(out, "{\"churn\": {\"connectsPerSecond\": %.1f, \"failures\": %lld, \"reconnects\": %lld, "
                 "\"connectTimeMs\": {\"p50\": %.3f, \"p99\": %.3f}}}\n",
            window > 0 ? ntimes / window : 0, failures, ntimes, p50, p99);
    fclose(out);
    fprintf(stderr, "[c] %lld reconnects in %.1f s, %lld failed, p50 %.2f ms, p99 %.2f ms\n", ntimes, window, failures, p50, p99);
    return 0;
}
