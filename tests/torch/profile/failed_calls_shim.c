/* A diagnosis aid for tests/torch/profile/sandbox_cuinit.py (tests only; the
 * GPU machine has no strace): loaded with LD_PRELOAD into a process that
 * starts the CUDA driver, it writes one line to stderr for each library
 * call of the kinds below that fails (its name, what it was given, errno),
 * and for each device file opened, so that a CUDA error 304 ("OS call
 * failed") inside a sandbox names the call the driver was refused.
 *   cc -shared -fPIC -O1 -o failed_calls_shim.so failed_calls_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int lines;

static void say(const char* fmt, ...) {
  if (lines++ > 400) return;
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

static const char* fd_path(int fd, char* out, size_t cap) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, cap - 1);
  out[n > 0 ? n : 0] = '\0';
  return out;
}

#define NEXT(ret, name, ...)                          \
  static ret (*next)(__VA_ARGS__);                    \
  if (!next) next = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

static void after_open(const char* fn, const char* path, int flags, int rc) {
  const int e = errno;
  if (rc < 0)
    say("shim: %s(%s, 0x%x) failed: %s", fn, path ? path : "(null)", flags, strerror(e));
  else if (path && strncmp(path, "/dev/", 5) == 0)
    say("shim: %s(%s, 0x%x) = fd %d", fn, path, flags, rc);
  errno = e;
}

// open and open64, openat and openat64 (the mode passed on as given).
#define OPEN_LIKE(name)                                         \
  int name(const char* path, int flags, ...) {                  \
    NEXT(int, #name, const char*, int, mode_t);                 \
    va_list ap;                                                 \
    va_start(ap, flags);                                        \
    mode_t m = (mode_t)va_arg(ap, int);                         \
    va_end(ap);                                                 \
    int rc = next(path, flags, m);                              \
    after_open(#name, path, flags, rc);                         \
    return rc;                                                  \
  }
#define OPENAT_LIKE(name)                                       \
  int name(int dir, const char* path, int flags, ...) {         \
    NEXT(int, #name, int, const char*, int, mode_t);            \
    va_list ap;                                                 \
    va_start(ap, flags);                                        \
    mode_t m = (mode_t)va_arg(ap, int);                         \
    va_end(ap);                                                 \
    int rc = next(dir, path, flags, m);                         \
    after_open(#name, path, flags, rc);                         \
    return rc;                                                  \
  }
OPEN_LIKE(open)
OPEN_LIKE(open64)
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)
int __open_2(const char* path, int flags) {
  NEXT(int, "__open_2", const char*, int);
  int rc = next(path, flags);
  after_open("__open_2", path, flags, rc);
  return rc;
}
int __open64_2(const char* path, int flags) {
  NEXT(int, "__open64_2", const char*, int);
  int rc = next(path, flags);
  after_open("__open64_2", path, flags, rc);
  return rc;
}
static FILE* after_fopen(const char* fn, FILE* f, const char* path, const char* mode) {
  if (!f) {
    const int e = errno;
    say("shim: %s(%s, %s) failed: %s", fn, path, mode, strerror(e));
    errno = e;
  }
  return f;
}
FILE* fopen(const char* path, const char* mode) {
  NEXT(FILE*, "fopen", const char*, const char*);
  return after_fopen("fopen", next(path, mode), path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  NEXT(FILE*, "fopen64", const char*, const char*);
  return after_fopen("fopen64", next(path, mode), path, mode);
}
int access(const char* path, int mode) {
  NEXT(int, "access", const char*, int);
  int rc = next(path, mode);
  if (rc != 0) {
    const int e = errno;
    say("shim: access(%s, %d) failed: %s", path, mode, strerror(e));
    errno = e;
  }
  return rc;
}
int ioctl(int fd, unsigned long req, ...) {
  NEXT(int, "ioctl", int, unsigned long, void*);
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  int rc = next(fd, req, arg);
  if (rc != 0) {
    const int e = errno;
    char p[256];
    say("shim: ioctl(fd %d %s, 0x%lx) = %d: %s", fd, fd_path(fd, p, sizeof p), req, rc, strerror(e));
    errno = e;
  }
  return rc;
}
static void* after_mmap(const char* fn, void* r, size_t len, int prot, int flags, int fd) {
  if (r == MAP_FAILED) {
    const int e = errno;
    char p[256];
    say("shim: %s(len %zu, prot %d, flags 0x%x, fd %d %s) failed: %s", fn, len, prot, flags, fd,
        fd >= 0 ? fd_path(fd, p, sizeof p) : "", strerror(e));
    errno = e;
  }
  return r;
}
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  NEXT(void*, "mmap", void*, size_t, int, int, int, off_t);
  return after_mmap("mmap", next(addr, len, prot, flags, fd, off), len, prot, flags, fd);
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  NEXT(void*, "mmap64", void*, size_t, int, int, int, off_t);
  return after_mmap("mmap64", next(addr, len, prot, flags, fd, off), len, prot, flags, fd);
}
int mknod(const char* path, mode_t mode, dev_t dev) {
  NEXT(int, "mknod", const char*, mode_t, dev_t);
  int rc = next(path, mode, dev);
  const int e = errno;
  say("shim: mknod(%s, 0%o) = %d%s%s", path, mode, rc, rc ? ": " : "", rc ? strerror(e) : "");
  errno = e;
  return rc;
}
int execve(const char* path, char* const argv[], char* const envp[]) {
  NEXT(int, "execve", const char*, char* const*, char* const*);
  say("shim: execve(%s)", path);
  return next(path, argv, envp);
}
static void after_stat(const char* fn, const char* path, int rc, unsigned uid, unsigned gid, unsigned mode,
                       unsigned long rdev) {
  const int e = errno;
  if (rc != 0)
    say("shim: %s(%s) failed: %s", fn, path, strerror(e));
  else if (strncmp(path, "/dev/", 5) == 0)
    say("shim: %s(%s): uid %u gid %u mode 0%o rdev %lx", fn, path, uid, gid, mode, rdev);
  errno = e;
}
int __xstat64(int ver, const char* path, struct stat64* st) {
  NEXT(int, "__xstat64", int, const char*, struct stat64*);
  int rc = next(ver, path, st);
  after_stat("__xstat64", path, rc, st->st_uid, st->st_gid, st->st_mode, st->st_rdev);
  return rc;
}
int stat64(const char* path, struct stat64* st) {
  NEXT(int, "stat64", const char*, struct stat64*);
  int rc = next(path, st);
  after_stat("stat64", path, rc, st->st_uid, st->st_gid, st->st_mode, st->st_rdev);
  return rc;
}
int stat(const char* path, struct stat* st) {
  NEXT(int, "stat", const char*, struct stat*);
  int rc = next(path, st);
  after_stat("stat", path, rc, st->st_uid, st->st_gid, st->st_mode, st->st_rdev);
  return rc;
}
long syscall(long nr, ...) {
  NEXT(long, "syscall", long, long, long, long, long, long, long);
  va_list ap;
  va_start(ap, nr);
  long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long),
       f = va_arg(ap, long), g = va_arg(ap, long);
  va_end(ap);
  long rc = next(nr, a, b, c, d, f, g);
  if (rc < 0) {
    const int e = errno;
    say("shim: syscall(%ld, 0x%lx, 0x%lx) failed: %s", nr, a, b, strerror(e));
    errno = e;
  }
  return rc;
}
