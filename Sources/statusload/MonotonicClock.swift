import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic and wall-clock time stamps. The monotonic clock is the system's `CLOCK_MONOTONIC`, so a time stamp taken
/// by one loader process can be compared with one taken by another on the same machine.
enum MonotonicClock {
    /// Nanoseconds of the monotonic clock (not affected by wall-clock changes).
    static func nanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Microseconds of the monotonic clock: the send time a change carries in its custom status.
    static func micros() -> UInt64 { nanos() / 1000 }

    /// Wall-clock epoch milliseconds.
    static func epochMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
