/* TCP_ZEROCOPY_RECEIVE experiment: a receiver that maps the payload (getsockopt
 * TCP_ZEROCOPY_RECEIVE on an mmap of the socket) against one that read(2)s it; it prints the
 * rate and how many bytes were mapped rather than copied (the kernel maps only whole,
 * page-aligned payload pages and hands the rest back as recv_skip_hint, copied here with recv).
 * Build: gcc -O2 -o zc bench/zerocopy_receive.c
 * usage: zc server PORT copy|zc   (then)   zc client ADDR PORT SECS
 * Measured on the development machine (kernel 6.18, 2026-11): 0 bytes mapped on loopback and on
 * a veth pair at MTU 1500, 4148 (MSS 4096) and 65520; the zc receiver was 3-35 % slower than
 * the copying one (a getsockopt and a poll per chunk, then the same copy). So linerate does not
 * offer it: it would report a mode that copies anyway. A NIC with header split is where it can
 * map; rerun this there before adding it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#define CHUNK (1 << 20)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    if (!strcmp(argv[1], "client")) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
        inet_pton(AF_INET, argv[2], &a.sin_addr);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (void *)&a, sizeof a)) { perror("connect"); return 1; }
        char *buf = aligned_alloc(4096, CHUNK); memset(buf, 0x5a, CHUNK);
        double end = now() + atof(argv[4]);
        while (now() < end) if (write(fd, buf, CHUNK) < 0) { perror("write"); return 1; }
        close(fd); return 0;
    }
    int zc = !strcmp(argv[3], "zc");
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (bind(l, (void *)&a, sizeof a) || listen(l, 1)) { perror("listen"); return 1; }
    int fd = accept(l, NULL, NULL);
    char *buf = malloc(CHUNK);
    void *map = zc ? mmap(NULL, CHUNK, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    if (zc && map == MAP_FAILED) { perror("mmap of the socket"); return 1; }
    unsigned long long mapped = 0, copied = 0, calls = 0, zc_errors = 0;
    double t0 = now();
    for (;;) {
        if (zc) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, 10000);
            struct tcp_zerocopy_receive z; memset(&z, 0, sizeof z);
            z.address = (unsigned long)map; z.length = CHUNK;
            socklen_t zl = sizeof z;
            calls++;
            int err = getsockopt(fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &z, &zl); if (err) { zc_errors++; if (zc_errors == 1) perror("TCP_ZEROCOPY_RECEIVE"); }
            else {
                mapped += z.length;
                if (z.length) { volatile char c = ((char *)map)[z.length - 1]; (void)c; }
            }
            size_t skip = z.recv_skip_hint;
            if (err || (!z.length && !skip)) skip = CHUNK;
            if (skip) {
                ssize_t n = recv(fd, buf, skip > CHUNK ? CHUNK : skip, err || !z.length ? 0 : MSG_DONTWAIT);
                if (n == 0) break;
                if (n > 0) copied += n;
                else if (errno != EAGAIN) { perror("recv"); break; }
            }
        } else {
            ssize_t n = read(fd, buf, CHUNK);
            if (n <= 0) break;
            copied += n;
        }
    }
    double t = now() - t0;
    printf("%s: %.2f Gb/s, mapped %llu bytes (%.1f%%), copied %llu, getsockopt calls %llu, errors %llu\n",
           zc ? "zerocopy" : "copy", (mapped + copied) * 8 / t / 1e9, mapped,
           100.0 * mapped / (mapped + copied + 1), copied, calls, zc_errors);
    return 0;
}
