/* clockshift: LD_PRELOAD shim that moves a process's wall clock (CLOCK_REALTIME,
 * gettimeofday, time) by the number of milliseconds written in $CLOCKSHIFT_FILE, re-read every
 * 10 ms. Monotonic clocks are untouched: this is an NTP step, Kleppmann's clock jump.
 *
 * Why not libfaketime: Debian's redis-server links jemalloc, and libfaketime's initialisation
 * recurses through jemalloc into clock_gettime and aborts the server. This shim never
 * allocates: it calls the kernel directly and reads the file with open/read. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile long long offset_ns;
static volatile long long next_check_ns;

static long long monotonic_ns(void) {
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void refresh_offset(void) {
    long long now = monotonic_ns();
    if (now < next_check_ns) return;
    next_check_ns = now + 10000000LL;
    const char *path = getenv("CLOCKSHIFT_FILE");
    if (!path) return;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    offset_ns = strtoll(buf, NULL, 10) * 1000000LL;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, id, ts);
    if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        refresh_offset();
        long long v = ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
        ts->tv_sec = v / 1000000000LL;
        ts->tv_nsec = v % 1000000000LL;
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    int r = clock_gettime(CLOCK_REALTIME, &ts);
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return r;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
