import Foundation
import Synchronization

/// A `redis-server` whose wall clock runs ahead or behind the machine's, as on a host of a cluster whose clock is not
/// in step: a small library preloaded into the process (`LD_PRELOAD`) adds `CLOCK_SHIFT_MS` to every reading of the
/// real-time clock (`clock_gettime` of `CLOCK_REALTIME`, `gettimeofday`, `time`), which `TIME`, scripts' `TIME` and
/// expiries read. The monotonic clocks are left alone. It goes to the system call itself, so it allocates nothing and
/// the server's allocator, which reads the clock while it starts, is not called back into. Compiled with the system's
/// C compiler on first use.
public enum ClockShift {
    /// The environment that makes a child process's clock run `shift` ahead (negative: behind).
    public static func environment(shift: Duration) throws -> [String: String] {
        let milliseconds = shift.components.seconds * 1000 + shift.components.attoseconds / 1_000_000_000_000_000
        return ["LD_PRELOAD": try library(), "CLOCK_SHIFT_MS": String(milliseconds)]
    }

    private static let built = Mutex<String?>(nil)

    private static func library() throws -> String {
        try built.withLock { path in
            if let path { return path }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("statusd-clock-shift-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let source = directory.appendingPathComponent("clock_shift.c")
            let library = directory.appendingPathComponent("clock_shift.so")
            try Self.source.write(to: source, atomically: true, encoding: .utf8)
            let compiler = Process()
            compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            compiler.arguments = ["cc", "-shared", "-fPIC", "-O2", "-o", library.path, source.path]
            try compiler.run()
            compiler.waitUntilExit()
            guard compiler.terminationStatus == 0 else {
                throw RedisTestClusterError(message: "cc could not build the clock shift library (status \(compiler.terminationStatus))")
            }
            path = library.path
            return library.path
        }
    }

    private static let source = """
        #define _GNU_SOURCE
        #include <stdlib.h>
        #include <sys/syscall.h>
        #include <sys/time.h>
        #include <time.h>
        #include <unistd.h>

        static long long shift_ns(void) {
            static long long shift = -1;
            if (shift == -1) {
                const char *value = getenv("CLOCK_SHIFT_MS");
                shift = (value ? atoll(value) : 0) * 1000000LL;
            }
            return shift;
        }

        int clock_gettime(clockid_t clock, struct timespec *ts) {
            int result = (int)syscall(SYS_clock_gettime, clock, ts);
            if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
                long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns();
                ts->tv_sec = ns / 1000000000LL;
                ts->tv_nsec = ns % 1000000000LL;
            }
            return result;
        }

        int gettimeofday(struct timeval *tv, void *tz) {
            struct timespec ts;
            (void)tz;
            if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
            return 0;
        }

        time_t time(time_t *out) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            if (out) *out = ts.tv_sec;
            return ts.tv_sec;
        }
        """
}
