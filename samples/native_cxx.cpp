// SPDX-License-Identifier: MIT
// A C++ library for samples/native_cxx.py (tests/e2e/test_native_threads.py): threads that run
// no Python, each named with pthread_setname_np, each in a member function whose symbol is
// mangled (_ZN4cxxs7Reducer17finalize_backwardEi):
//   "cxx-waiter"  a pthread blocked in read(2) on a pipe nobody writes (read without a signal);
//   "cxx-spinner" a std::thread (the library links libstdc++, as C++ code does) computing in
//                 cxxs::Spinner::spin() without a system call (signalled); built with
//                 -DCXX_PLAIN, a pthread, and the library uses nothing of libstdc++: linked
//                 without it, the process has none loaded;
// and cxx_block, which a Python thread calls through ctypes to block in the same read.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#ifndef CXX_PLAIN
#include <thread>
#endif

namespace cxxs {

class Reducer {
public:
    __attribute__((noinline)) void finalize_backward(int fd);
};

class Spinner {
public:
    __attribute__((noinline)) static void spin();
};

void Reducer::finalize_backward(int fd)
{
    char c;
    while (read(fd, &c, 1) != 0) {
    }
    for (;;)
        pause();
}

static volatile unsigned long sink;

void Spinner::spin()
{
    for (unsigned long i = 0;; i++)
        sink = sink * 31 + i;
}

} // namespace cxxs

static std::atomic<long> waiter_tid, spinner_tid;
static int waiter_fd;

static void *waiter_main(void *)
{
    pthread_setname_np(pthread_self(), "cxx-waiter");
    waiter_tid = (long)syscall(SYS_gettid);
    cxxs::Reducer().finalize_backward(waiter_fd);
    return nullptr;
}

static void spinner_main()
{
    pthread_setname_np(pthread_self(), "cxx-spinner");
    spinner_tid = (long)syscall(SYS_gettid);
    cxxs::Spinner::spin();
}

#ifdef CXX_PLAIN
static void *spinner_pthread(void *)
{
    spinner_main();
    return nullptr;
}
#endif

// Starts the two native threads; returns once both have named themselves.
extern "C" void cxx_start(int fd, int spin)
{
    pthread_t t;
    waiter_fd = fd;
    pthread_create(&t, nullptr, waiter_main, nullptr);
#ifdef CXX_PLAIN
    if (spin)
        pthread_create(&t, nullptr, spinner_pthread, nullptr);
#else
    if (spin)
        std::thread(spinner_main).detach();
#endif
    while (!waiter_tid || (spin && !spinner_tid))
        usleep(1000);
}

extern "C" long cxx_waiter_tid(void)
{
    return waiter_tid;
}

extern "C" long cxx_spinner_tid(void)
{
    return spinner_tid;
}

// Called from a Python thread (ctypes.CDLL: the GIL released): blocks in the same member
// function, below the Python frame that called it.
extern "C" void cxx_block(int fd)
{
    cxxs::Reducer().finalize_backward(fd);
}
